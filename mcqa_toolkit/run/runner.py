"""run(): items x strategy -> one record per (item, shuffle), through any Backend; resumable.

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
from typing import Any, Iterable

import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit import __version__
from mcqa_toolkit.backends.base import Backend, check_capabilities
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.prompts import load_template, render, select_shots, split_shots
from mcqa_toolkit.prompts.permutations import permutations, stable_seed
from mcqa_toolkit.run.adaptive import administer
from mcqa_toolkit.run.records import make_record, run_fields
from mcqa_toolkit.run.store import RunDir
from mcqa_toolkit.run.strategy import Strategy
from mcqa_toolkit.scoring.first_token import score_first_token
from mcqa_toolkit.scoring.generate import score_generate
from mcqa_toolkit.scoring.loglik import score_loglik
from mcqa_toolkit.scoring.scored import Scored


def _check_items(items: ItemSet, strategy: Strategy) -> None:
    bad = [it.item_id for it in items if it.answer_type != "single"]
    if bad:
        raise ValueError(f"run() scores single-answer items; {len(bad)} are not (e.g. {bad[:3]}): filter them "
                         "first, e.g. items.filter(answer_type='single')")
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
                       option_scores=scored.option_scores, status=scored.status,
                       extraction_rule=scored.extraction_rule, generated_text=scored.generated_text,
                       n_prompt_tokens=scored.n_prompt_tokens, n_forwarded_tokens=forwarded, seconds=seconds,
                       extra={**scored.extra, "shot_ids": list(prompt.shot_ids)})


def _score(backend: Backend, block: list[Item], strategy: Strategy, prompts: list) -> list[Scored]:
    if strategy.method == "first_token":
        return score_first_token(backend, prompts)
    if strategy.method in ("loglik", "cloze"):
        return score_loglik(backend, prompts, strategy.normalization)
    seeds = [stable_seed(strategy.seed, p.item_id, p.shuffle) for p in prompts]
    languages = {strategy.language or it.language for it in block}
    return score_generate(backend, prompts, language=languages.pop() if len(languages) == 1 else None,
                          max_new_tokens=strategy.max_new_tokens, temperature=strategy.temperature,
                          stop=strategy.stop, seeds=seeds)


def provenance(backend: Backend, strategy: Strategy, items: ItemSet, dataset: str,
               excluded: Iterable[str]) -> dict[str, Any]:
    """What produced a run: versions, the backend's identity (model, weights hash, server), strategy, dataset."""
    import importlib.metadata as md

    return {"mcqa_toolkit": __version__, "python": platform.python_version(),
            "packages": {p: md.version(p) for p in ("numpy", "pandas")},
            "model": backend.provenance(), "strategy": strategy.to_dict(), "strategy_hash": strategy.hash,
            "dataset": dataset, "dataset_fingerprint": items.fingerprint(), "n_items": len(items),
            "excluded_shot_items": sorted(excluded), "seed": strategy.seed}


def _usage_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: v - before.get(k, 0) for k, v in after.items() if isinstance(v, (int, float))}


def run(items: ItemSet, backend: Backend, strategy: Strategy, out_dir: str | Path, *, dataset: str = "",
        shot_pool: ItemSet | None = None, limit: int | None = None, progress: bool = True) -> pd.DataFrame:
    """Administer `items` to `backend` under `strategy`; one record per (item, shuffle) in `out_dir`; resumable.

    Few-shot examples come from `shot_pool` (default: `items`) and are excluded from evaluation. `limit`
    keeps the first N evaluated items (smoke runs). Returns the records as a DataFrame (run.columns + extra).
    """
    check_capabilities(backend, strategy.method, strategy.chat)
    _check_items(items, strategy)
    store = RunDir(out_dir)
    todo_items, shots = plan_shots(items, strategy, shot_pool)
    excluded = set(items.ids) - set(todo_items.ids)
    if limit is not None:
        todo_items = todo_items[:limit]
    if not len(todo_items):
        raise ValueError("no items left to evaluate after excluding few-shot examples")
    prov = provenance(backend, strategy, todo_items, dataset, excluded)
    _check_resume(store, prov)
    run_info = run_fields(run_id=store.name, model=backend.name, dataset=dataset, strategy=strategy.name,
                          strategy_hash=strategy.hash, method=strategy.method, normalization=strategy.normalization,
                          shots=strategy.shots, seed=strategy.seed)
    store.write_run_info(prov)
    usage_start = backend.usage()
    # cloze hides the options; loglik follows its style; letter methods must show them
    with_options = {"cloze": False, "loglik": None}.get(strategy.method, True)

    def prompt_for(it: Item, perm: tuple[int, ...], k: int) -> Any:
        return render(it, load_template(strategy.language or it.language, strategy.style), shots=shots[it.item_id],
                      permutation=perm, shuffle=k, chat=strategy.chat, with_options=with_options)

    def records_of(block: list[Item], prompts: list) -> list[dict[str, Any]]:
        """Score one unit and make its records; tokens and time are shared equally by its prompts."""
        before, t0 = backend.usage().get("forwarded_tokens", 0), time.perf_counter()
        scored = _score(backend, block, strategy, prompts)
        seconds = (time.perf_counter() - t0) / len(prompts)
        forwarded = (backend.usage().get("forwarded_tokens", 0) - before) / len(prompts)
        by_id = {it.item_id: it for it in block}
        return [_record(by_id[pr.item_id], pr, sc, run_info, seconds, forwarded) for pr, sc in zip(prompts, scored)]

    if strategy.adaptive is not None:
        administer(todo_items, strategy, store, prompt_for, lambda it, pr: records_of([it], [pr])[0], progress)
    else:
        _fixed_form(todo_items, strategy, store, prompt_for, records_of, f"{strategy.name} {backend.name}", progress)
    prov["usage"] = _usage_delta(usage_start, backend.usage())
    return store.finalize(prov)


def _fixed_form(items: ItemSet, strategy: Strategy, store: RunDir, prompt_for: Any, records_of: Any, label: str,
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
        perms = {it.item_id: permutations(it.n_options, strategy.shuffles, seed=strategy.seed, key=it.parallel_id,
                                          keep_original=strategy.keep_original) for it in block}
        if all((it.item_id, k) in done for it in block for k in range(len(perms[it.item_id]))):
            bar.update(len(block))
            continue
        prompts = [prompt_for(it, p, k) for it in block for k, p in enumerate(perms[it.item_id])]
        store.append(r for r in records_of(block, prompts) if (r["item_id"], r["shuffle"]) not in done)
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
    if old.get("model", {}).get("source") != prov["model"]["source"]:
        raise ValueError(f"{store.dir} holds a run of model {old['model'].get('source')!r}, not "
                         f"{prov['model']['source']!r}; use another out_dir")
