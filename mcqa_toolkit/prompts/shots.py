"""Few-shot example selection, answer-letter balancing, and keeping shots out of the evaluated items.

Typical use (the runner does this):

    pool, eval_items = split_shots(items, k=4, rule="easiest", seed=0)   # reserve the shots
    for target in eval_items:
        shots = select_shots(pool, target, 4, "easiest", seed=0)         # [(Item, permutation), ...]
        prompt = render(target, template, shots=shots, ...)

Rules:
- `ids`: the given item ids, in the given order (reproduces a paper's fixed prompt exactly).
- `easiest`: lowest human IRT b (`Item.irt[1]`). k = 1: the easiest item of the target's subject (ENEM
  paper, 1-shot). k > 1: the easiest item of each of k subjects, the target's own subject first, then the
  other subjects by their easiest b (ties by name). The ENEM paper's 4-shot prompt used one fixed subject
  order for every target (sciences, languages, humanities, maths; Listing 8): use rule `ids` to get it.
- `random`: a seeded sample, the same for every target with the same candidates, so the few-shot block is
  shared across items (and across languages when translations share a parallel_id).
Candidates are single-answer items with a key from the target's exam version (`Item.exam_language`, the
language of its prompt: the English and Spanish questions of ENEM's Portuguese exam take the Portuguese exam's
shots, like every other question of it), and never the target or one of its translations. Selection is deterministic:
ties are broken by parallel_id, item_id.
With `balance_letters`, shot options are permuted so the k answers fall on distinct letters while k <= the
number of options (then on the least-used letters): a shot whose letter is already free keeps its original
order, otherwise its answer swaps places with the option at a free letter chosen with the seed.
"""
from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence

from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.prompts.permutations import identity, stable_seed

__all__ = ["RULES", "select_shots", "split_shots", "balanced_permutations"]

RULES = ("ids", "easiest", "random")


def _usable(item: Item) -> bool:
    return item.answer_type == "single" and isinstance(item.answer, int)


def _order_key(item: Item) -> tuple[str, str]:
    return (item.parallel_id, item.item_id)


def _check_args(k: int, rule: str) -> None:
    if not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be a non-negative int, got {k!r}")
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")


def _easiest_by_subject(items: Iterable[Item]) -> dict[str, Item]:
    best: dict[str, Item] = {}
    for it in items:
        if it.irt is None:
            continue
        cur = best.get(it.subject)
        if cur is None or (it.irt[1], *_order_key(it)) < (cur.irt[1], *_order_key(cur)):  # type: ignore[index]
            best[it.subject] = it
    return best


def balanced_permutations(shots: Sequence[Item], seed: int = 0) -> list[tuple[Item, tuple[int, ...]]]:
    """Pair each shot with a permutation spreading the answers over distinct letters (see module doc)."""
    rng = random.Random(stable_seed("balance_letters", seed, *(s.parallel_id for s in shots)))
    counts: dict[int, int] = defaultdict(int)
    out = []
    for shot in shots:
        perm = list(identity(shot.n_options))
        pos = shot.answer
        if shot.answer_type != "single" or not isinstance(pos, int):
            raise ValueError(f"{shot.item_id!r} has no single-answer key and cannot be a few-shot example")
        least = min(counts[p] for p in perm)
        if counts[pos] != least:
            new = rng.choice([p for p in perm if counts[p] == least])
            perm[pos], perm[new] = perm[new], perm[pos]  # the key moves to `new`, that option to the key's place
            pos = new
        counts[pos] += 1
        out.append((shot, tuple(perm)))
    return out


def select_shots(
    pool: Iterable[Item],
    target: Item,
    k: int,
    rule: str,
    *,
    seed: int = 0,
    ids: Sequence[str] | None = None,
    balance_letters: bool = True,
) -> list[tuple[Item, tuple[int, ...]]]:
    """k few-shot examples for `target` from `pool` by `rule`, each with the option order to show it in."""
    _check_args(k, rule)
    pool = list(pool)
    if rule == "ids":
        chosen = _by_ids(pool, target, k, ids)
    elif k == 0:
        chosen = []
    else:
        cands = [
            it for it in pool
            if _usable(it) and it.item_id != target.item_id and it.parallel_id != target.parallel_id
            and (not target.exam_language or it.exam_language == target.exam_language)
        ]
        chosen = _easiest(cands, target, k) if rule == "easiest" else _random(cands, target, k, seed)
    if not balance_letters:
        return [(s, identity(s.n_options)) for s in chosen]
    return balanced_permutations(chosen, seed)


def _by_ids(pool: list[Item], target: Item, k: int, ids: Sequence[str] | None) -> list[Item]:
    if ids is None or isinstance(ids, str) or len(ids) != k:
        raise ValueError(f"rule 'ids' needs ids, a sequence of k={k} item ids, got {ids!r}")
    by_id = {it.item_id: it for it in pool}
    out = []
    for i in ids:
        if i not in by_id:
            raise ValueError(f"ids: {i!r} is not in the shot pool")
        it = by_id[i]
        if not _usable(it):
            raise ValueError(f"ids: {i!r} has no single-answer key and cannot be a few-shot example")
        if it.item_id == target.item_id or it.parallel_id == target.parallel_id:
            raise ValueError(f"ids: {i!r} is the target item {target.item_id!r} (or a translation of it)")
        out.append(it)
    return out


def _easiest(cands: list[Item], target: Item, k: int) -> list[Item]:
    best = _easiest_by_subject(cands)
    if target.subject not in best:
        raise ValueError(
            f"rule 'easiest': no candidate with IRT parameters in subject {target.subject!r} "
            f"(exam language {target.exam_language!r}) for target {target.item_id!r}"
        )
    others = sorted((s for s in best if s != target.subject), key=lambda s: (best[s].irt[1], s))  # type: ignore
    subjects = [target.subject] + others
    if len(subjects) < k:
        raise ValueError(
            f"rule 'easiest' with k={k} needs {k} subjects with IRT parameters, the pool has {subjects}"
        )
    return [best[s] for s in subjects[:k]]


def _random(cands: list[Item], target: Item, k: int, seed: int) -> list[Item]:
    if len(cands) < k:
        raise ValueError(f"rule 'random': only {len(cands)} candidate(s) for target {target.item_id!r}, k={k}")
    rng = random.Random(stable_seed("random_shots", seed))  # not keyed by target: one shared block per run
    return rng.sample(sorted(cands, key=_order_key), k)


def split_shots(
    items: Iterable[Item], k: int, rule: str, *, seed: int = 0, ids: Sequence[str] | None = None
) -> tuple[ItemSet, ItemSet]:
    """(shot pool, items to evaluate): reserve the items `select_shots` may use, so none is also evaluated.

    The pool holds, per exam version (`Item.exam_language`): the `ids` (rule ids); the easiest item of each
    subject (easiest); or the
    items of k seeded parallel_ids (random). Every translation of a pool item is dropped from the evaluated
    items too, since its answer is in the prompt.
    """
    _check_args(k, rule)
    items = ItemSet(items, getattr(items, "name", ""))
    if k == 0:
        return ItemSet([], items.name), items
    if rule == "ids":
        if ids is None or isinstance(ids, str) or len(ids) != k:
            raise ValueError(f"rule 'ids' needs ids, a sequence of k={k} item ids, got {ids!r}")
        missing = [i for i in ids if i not in items]
        if missing:
            raise ValueError(f"ids: {missing} not among the items")
        pool_ids = set(ids)
    elif rule == "easiest":
        by_lang: dict[str, list[Item]] = defaultdict(list)
        for it in items:
            if _usable(it):
                by_lang[it.exam_language].append(it)
        pool_ids = {it.item_id for group in by_lang.values() for it in _easiest_by_subject(group).values()}
        if not pool_ids:
            raise ValueError("rule 'easiest': no single-answer item has IRT parameters")
    else:
        groups = sorted({it.parallel_id for it in items if _usable(it)})
        if len(groups) < k:
            raise ValueError(f"rule 'random': only {len(groups)} usable question(s), k={k}")
        chosen = set(random.Random(stable_seed("split_shots", seed)).sample(groups, k))
        pool_ids = {it.item_id for it in items if it.parallel_id in chosen and _usable(it)}
    pool = [it for it in items if it.item_id in pool_ids]
    leaked = {it.parallel_id for it in pool}
    return ItemSet(pool, items.name), ItemSet([it for it in items if it.parallel_id not in leaked], items.name)
