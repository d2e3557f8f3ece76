"""run(): items x strategy -> one record per (item, shuffle), through any Backend; resumable.

Every question type is administered (run.administer says how): single-answer items by the strategy's method,
the others by generation or yes/no log-probs, short answers graded by the judges in the same unit of work.
Records are appended to the run folder's records.jsonl after each unit of work (one item, or a block of
items for batched greedy generation); a re-run with the same folder skips finished records, and refuses to
mix a different strategy, model or dataset into it. The finished run is compacted to Parquet with its
provenance. Same seed => identical records (timing fields aside). A strategy the backend cannot serve is
refused before any work.
"""
from __future__ import annotations

import platform
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit import __version__
from mcqa_toolkit.backends.base import Backend, check_capabilities
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.prompts import load_template, render, select_shots, split_shots
from mcqa_toolkit.prompts.permutations import stable_seed
from mcqa_toolkit.run.adaptive import administer
from mcqa_toolkit.run.administer import ask_path, check_plan, record_permutations, score_typed
from mcqa_toolkit.run.records import UNSET, make_record, run_fields
from mcqa_toolkit.run.store import RunDir
from mcqa_toolkit.run.strategy import Strategy
from mcqa_toolkit.scoring.first_token import score_first_token
from mcqa_toolkit.scoring.judge import COMBINE_RULES, LLMJudge
from mcqa_toolkit.scoring.generate import score_generate
from mcqa_toolkit.scoring.loglik import score_loglik
from mcqa_toolkit.scoring.scored import Scored


def _check_items(items: ItemSet, strategy: Strategy) -> None:
    if strategy.adaptive is not None:
        bad = [it.item_id for it in items if ask_path(it, strategy) != "letters"]
        if bad:
            raise ValueError(f"adaptive administration asks single-answer questions by letters; {len(bad)} items "
                             f"are not (e.g. {bad[:3]}): filter them, e.g. items.filter(answer_type='single')")
    if strategy.shots and strategy.shot_rule == "ids" and not strategy.shot_ids:
        raise ValueError("Strategy.shot_rule 'ids' needs shot_ids")


def plan_shots(items: ItemSet, strategy: Strategy, pool: ItemSet | None = None) -> tuple[ItemSet, dict[str, list]]:
    """(items to evaluate, item_id -> few-shot examples [(Item, permutation)]) for a strategy.

    Without an explicit `pool`, the shot candidates are reserved from `items` (prompts.split_shots) and
    they and their translations are not evaluated. With a pool (e.g. another year's exam), items sharing a
    parallel_id with a pool item are dropped from evaluation, since their answer would be in the prompt.
    """
    if not strategy.shots:
        return items, {it.item_id: [] for it in items}
    ids = strategy.shot_ids or None
    if pool is None:
        pool, evaluated = split_shots(items, strategy.shots, strategy.shot_rule, seed=strategy.seed, ids=ids)
    else:
        reserved = {it.parallel_id for it in pool}
        evaluated = ItemSet([it for it in items if it.parallel_id not in reserved], items.name)
    plan = {it.item_id: select_shots(pool, it, strategy.shots, strategy.shot_rule, seed=strategy.seed, ids=ids)
            for it in evaluated}
    return evaluated, plan


def _record(item: Item, prompt: Any, scored: Scored, run_info: dict[str, Any], seconds: float,
            forwarded: float) -> dict[str, Any]:
    return make_record(item, run_info, shuffle=prompt.shuffle, permutation=prompt.permutation, choice=scored.choice,
                       response=UNSET if item.answer_type == "single" else scored.response,
                       option_scores=scored.option_scores,
                       status=None if scored.status == "answered" else scored.status,
                       points_earned=scored.points_earned, judgements=scored.judgements,
                       extraction_rule=scored.extraction_rule, generated_text=scored.generated_text,
                       n_prompt_tokens=scored.n_prompt_tokens, n_forwarded_tokens=forwarded, seconds=seconds,
                       extra={**scored.extra, "shot_ids": list(prompt.shot_ids)})


def _language(block: list[Item], strategy: Strategy) -> str | None:
    """The extraction language of a block: its one prompt language, else None (all four)."""
    languages = {strategy.language or it.language for it in block}
    return languages.pop() if len(languages) == 1 else None


def _score(backend: Backend, block: list[Item], strategy: Strategy, prompts: list) -> list[Scored]:
    """Single-answer items (the letters path) by the strategy's method."""
    if strategy.method == "first_token":
        return score_first_token(backend, prompts)
    if strategy.method in ("loglik", "cloze"):
        return score_loglik(backend, prompts, strategy.normalization)
    seeds = [stable_seed(strategy.seed, p.item_id, p.shuffle) for p in prompts]
    return score_generate(backend, prompts, language=_language(block, strategy),
                          max_new_tokens=strategy.max_new_tokens, temperature=strategy.temperature,
                          stop=strategy.stop, seeds=seeds)


def _letters_prompt(it: Item, strategy: Strategy, shots: dict[str, list], with_options: bool | None,
                    permutation: tuple[int, ...], shuffle: int) -> Any:
    """A single-answer item's prompt in one option order, with its few-shot examples."""
    return render(it, load_template(strategy.language or it.language, strategy.style), shots=shots[it.item_id],
                  permutation=permutation, shuffle=shuffle, chat=strategy.chat, with_options=with_options)


def _score_block(backend: Backend, block: list[Item], strategy: Strategy, shots: dict[str, list],
                 with_options: bool | None, judges: Sequence[LLMJudge], combine: str) -> list[tuple[Any, Scored]]:
    """(prompt, Scored) for every record of a block: single-answer items as before, the rest by administer."""
    letters = [it for it in block if ask_path(it, strategy) == "letters"]
    typed = [it for it in block if ask_path(it, strategy) != "letters"]
    prompts = [_letters_prompt(it, strategy, shots, with_options, p, k)
               for it in letters for k, p in enumerate(record_permutations(it, strategy))]
    pairs = list(zip(prompts, _score(backend, letters, strategy, prompts))) if prompts else []
    if typed:
        pairs += score_typed(backend, typed, strategy, language=_language(typed, strategy), judges=judges,
                             combine=combine)
    return pairs


def provenance(backend: Backend, strategy: Strategy, items: ItemSet, dataset: str,
               excluded: Iterable[str], judges: Sequence[LLMJudge] = (), combine: str = "mean") -> dict[str, Any]:
    """What produced a run: versions, the backend's identity (model, weights hash, server), strategy, dataset."""
    import importlib.metadata as md

    return {"mcqa_toolkit": __version__, "python": platform.python_version(),
            "packages": {p: md.version(p) for p in ("numpy", "pandas")},
            "model": backend.provenance(), "strategy": strategy.to_dict(), "strategy_hash": strategy.hash,
            "dataset": dataset, "dataset_fingerprint": items.fingerprint(), "n_items": len(items),
            "excluded_shot_items": sorted(excluded), "seed": strategy.seed,
            **({"judges": [j.identity() for j in judges], "judge_combine": combine} if judges else {})}


def _usage_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0) for k, v in after.items() if isinstance(v, (int, float))}


def run(items: ItemSet, backend: Backend, strategy: Strategy, out_dir: str | Path, *, dataset: str = "",
        shot_pool: ItemSet | None = None, limit: int | None = None, progress: bool = True,
        judges: Sequence[LLMJudge] = (), combine: str = "mean") -> pd.DataFrame:
    """Administer `items` (any question types) to `backend` under `strategy`; one record per (item, shuffle)
    in `out_dir`; resumable.

    Few-shot examples come from `shot_pool` (default: `items`) and are excluded from evaluation. `limit`
    keeps the first N evaluated items (smoke runs). Short answers are graded by `judges` (scoring.judge.LLMJudge;
    required when there are short answers), their scores combined by `combine` (mean | majority). Returns the
    records as a DataFrame (run.columns + extra).
    """
    check_capabilities(backend, strategy.method, strategy.chat)
    _check_items(items, strategy)
    if combine not in COMBINE_RULES:
        raise ValueError(f"combine {combine!r} not in {COMBINE_RULES}")
    store = RunDir(out_dir)
    todo_items, shots = plan_shots(items, strategy, shot_pool)
    excluded = set(items.ids) - set(todo_items.ids)
    if limit is not None:
        todo_items = todo_items[:limit]
    if not len(todo_items):
        raise ValueError("no items left to evaluate after excluding few-shot examples")
    check_plan(todo_items, backend, strategy, judges)
    prov = provenance(backend, strategy, todo_items, dataset, excluded, judges, combine)
    _check_resume(store, prov)
    run_info = run_fields(run_id=store.name, model=backend.name, dataset=dataset, strategy=strategy.name,
                          strategy_hash=strategy.hash, method=strategy.method, normalization=strategy.normalization,
                          shots=strategy.shots, seed=strategy.seed)
    store.write_run_info(prov)
    usage_start = backend.usage()
    # cloze hides the options; loglik follows its style; letter methods must show them
    with_options = {"cloze": False, "loglik": None}.get(strategy.method, True)

    def records_of(block: list[Item]) -> list[dict[str, Any]]:
        """Score one unit of work (every record of its items) and make its records; tokens and time are shared
        equally by its records."""
        before, t0 = backend.usage().get("forwarded_tokens", 0), time.perf_counter()
        pairs = _score_block(backend, block, strategy, shots, with_options, judges, combine)
        seconds = (time.perf_counter() - t0) / len(pairs)
        forwarded = (backend.usage().get("forwarded_tokens", 0) - before) / len(pairs)
        by_id = {it.item_id: it for it in block}
        return [_record(by_id[pr.item_id], pr, sc, run_info, seconds, forwarded) for pr, sc in pairs]

    if strategy.adaptive is not None:
        def prompt_for(it: Item, perm: tuple[int, ...], k: int) -> Any:
            return _letters_prompt(it, strategy, shots, with_options, perm, k)

        def record_of(it: Item, prompt: Any) -> dict[str, Any]:
            before, t0 = backend.usage().get("forwarded_tokens", 0), time.perf_counter()
            scored = _score(backend, [it], strategy, [prompt])[0]
            return _record(it, prompt, scored, run_info, time.perf_counter() - t0,
                           backend.usage().get("forwarded_tokens", 0) - before)

        administer(todo_items, strategy, store, prompt_for, record_of, progress)
    else:
        _fixed_form(todo_items, strategy, store, records_of, f"{strategy.name} {backend.name}", progress)
    prov["usage"] = _usage_delta(usage_start, backend.usage())
    return store.finalize(prov)


def _fixed_form(items: ItemSet, strategy: Strategy, store: RunDir, records_of: Any, label: str,
                progress: bool) -> None:
    """Every item x shuffle, unit by unit, skipping finished records.

    A unit (one item, or a block of items for batched greedy generation) is always computed whole, even when
    a killed run already wrote some of its records, so float rounding never depends on where the kill
    happened; only the missing records are written.
    """
    done = store.done_keys()
    size = strategy.batch_size if strategy.method == "generate" and strategy.temperature == 0 else 1
    blocks = [list(items)[i:i + size] for i in range(0, len(items), size)]
    bar = tqdm(total=len(items), desc=label, disable=not progress, unit="item")
    for block in blocks:
        if all((it.item_id, k) in done for it in block for k in range(len(record_permutations(it, strategy)))):
            bar.update(len(block))
            continue
        store.append(r for r in records_of(block) if (r["item_id"], r["shuffle"]) not in done)
        bar.update(len(block))
    bar.close()


def _check_resume(store: RunDir, prov: dict[str, Any]) -> None:
    """Refuse to append to a directory holding records of another strategy, model or dataset."""
    old = store.run_info()
    if not old:
        return
    for key in ("strategy_hash", "dataset_fingerprint"):
        if old.get(key) != prov.get(key):
            raise ValueError(f"{store.dir} holds a run with a different {key} ({old.get(key)} != {prov.get(key)}); "
                             "use another out_dir or delete it")
    if old.get("judges", []) != prov.get("judges", []):
        raise ValueError(f"{store.dir} holds a run graded by other judges ({old.get('judges', [])}); use another "
                         "out_dir or delete it")
    if old.get("model", {}).get("source") != prov["model"]["source"]:
        raise ValueError(f"{store.dir} holds a run of model {old['model'].get('source')!r}, not "
                         f"{prov['model']['source']!r}; use another out_dir")
