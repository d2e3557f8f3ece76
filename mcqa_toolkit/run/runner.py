"""run(): items x strategy -> one record per (item, shuffle), through any Backend; resumable.

Every question type is asked as run.dispatch routes it: single-answer items by the strategy's method, the
others by generation or yes/no log-probs, short answers graded by the judges in the same block. Records are
appended to the run folder's records.jsonl after each block (one item; several for padded greedy generation, and
for log-prob methods as many as the backend's `items_per_call`); a re-run with the same folder skips finished
records, and refuses (records.state) to mix a different strategy, model, dataset or judging into it. One writer at a
time: the folder is locked (records.lock) while run() writes it. The finished run is compacted to Parquet with its
provenance, then summarised. Same seed => identical records (timing fields aside). A strategy the backend cannot
serve is refused before any work.

A backend that scores blocks elsewhere (backends.base.PooledBackend: run.pool's RemoteBackend, a Ray cluster's
workers) is given the blocks; their records come back to this process, in block order, and are written here exactly as
the in-process ones are: only keys the folder does not hold yet, so a block computed twice (a worker lost mid-block and
its block retried) is never written twice.
"""
from __future__ import annotations

import platform
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from mcqa_toolkit import __version__
from mcqa_toolkit.backends.base import Backend, PooledBackend, PreparingBackend, items_per_call, usage_delta
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.measure.summary import summarize_run
from mcqa_toolkit.prompts import select_shots, split_shots, template_languages
from mcqa_toolkit.records.factory import UNSET, make_record, run_fields
from mcqa_toolkit.records.identity import RunIdentity, model_name, shots_fingerprint
from mcqa_toolkit.records.state import OpenRun, RunState, open_for_write
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run.adaptive import run_adaptive
from mcqa_toolkit.run.dispatch import ask, ask_letters, check_plan, letters_prompt, prepare, record_permutations
from mcqa_toolkit.run.pipeline import ahead
from mcqa_toolkit.run.strategy import Strategy
from mcqa_toolkit.scoring.judge import COMBINE_RULES, LLMJudge
from mcqa_toolkit.scoring.methods import generates
from mcqa_toolkit.scoring.scored import Scored


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


def _usage_forwarded(backend: Backend) -> float:
    return backend.usage().get("forwarded_tokens", 0)


def measured(backend: Backend, ask_block: Any) -> tuple[list[tuple[Any, Scored]], float, float]:
    """(pairs, seconds, forwarded tokens) of one backend block, shared equally by its records."""
    before, t0 = _usage_forwarded(backend), time.perf_counter()
    pairs = ask_block()
    n = max(len(pairs), 1)
    return pairs, (time.perf_counter() - t0) / n, (_usage_forwarded(backend) - before) / n


def block_records(backend: Backend, block: Sequence[Item], strategy: Strategy, shots: dict[str, list],
                  run_info: dict[str, Any], judges: Sequence[LLMJudge] = (), combine: str = "mean") -> list[dict]:
    """Every record of a block of items (what one backend call scores), in the order `ask` gives them; the
    same function in this process and on a pool's workers (run.pool.worker)."""
    pairs, seconds, forwarded = measured(backend, lambda: ask(backend, block, strategy, shots, judges=judges,
                                                              combine=combine))
    by_id = {it.item_id: it for it in block}
    return [_record(by_id[pr.item_id], pr, sc, run_info, seconds, forwarded) for pr, sc in pairs]


def run(items: ItemSet, backend: Backend | str | dict[str, Any], strategy: Strategy, run_dir: str | Path, *,
        dataset: str = "", shot_pool: ItemSet | None = None, limit: int | None = None, progress: bool = True,
        judges: Sequence[LLMJudge] = (), combine: str = "mean", pool: Any = None) -> pd.DataFrame:
    """Administer `items` (any question types) to `backend` under `strategy`; one record per (item, shuffle)
    in the run folder `run_dir`; resumable.

    Few-shot examples come from `shot_pool` (default: `items`) and are excluded from evaluation. `limit`
    keeps the first N evaluated items (smoke runs). Short answers are graded by `judges` (scoring.judge.LLMJudge;
    required when there are short answers), their scores combined by `combine` (mean | majority). The folder is
    opened through records.state.open_for_write with what determines the records (records.identity.RunIdentity:
    model, dataset and items, strategy, shots, judges); a finished run is read back. The run ends with its
    summary.json (measure.summary), so its folder is complete as for run.recipe's runs. Returns the records as a
    DataFrame (records.columns + extra).

    `pool` (run.pool.RayPool): the items are scored by the pool's workers, and `backend` is then the model
    spec they load (a name/path or a params-file dict); judges on a pool are LLMJudges over backends of
    `pool.for_run([model, judge, ...])`.
    """
    if pool is not None:
        backend = pool.backend(backend)
    if isinstance(backend, (str, dict)):
        raise ValueError(f"backend {backend!r:.80} is a model spec: pass a loaded Backend, or pool= to load it on its "
                         "workers")
    plan = plan_run(items, strategy, dataset, shot_pool=shot_pool, limit=limit, judges=judges, combine=combine)
    check_plan(plan.items, backend, strategy, judges)
    identity = plan.identity(backend_model(backend), [backend_model(j.backend) for j in judges])
    with open_for_write(RunDir(run_dir), identity) as opened:
        if opened.state is RunState.COMPLETE:
            return opened.run_dir.load()
        records = administer(opened, plan, backend, plan.provenance(backend), progress)
        opened.complete(summarize_run(records))   # summary.json: the run is complete, as a report needs it
        return records


def backend_model(backend: Backend) -> str:
    """A loaded backend's model as the run identity names it (records.identity.model_name)."""
    prov = backend.provenance()
    return model_name(prov.get("backend"), prov.get("model") or backend.name)


@dataclass(frozen=True)
class RunPlan:
    """What a run will administer, known before any model is loaded: the evaluated items, each one's few-shot
    examples, the shot items left out, how short answers are judged, and the dataset they came from (`given`:
    every item the run was given, what its folder's items.jsonl holds; the loader's arguments and exam version)."""

    items: ItemSet
    strategy: Strategy
    shots: dict[str, list]
    excluded: frozenset[str]
    dataset: str = ""
    judges: tuple[LLMJudge, ...] = ()
    combine: str = "mean"
    skipped: tuple[Any, ...] = ()      # records the dataset's loader left out (items.SkippedRecord)
    given: ItemSet | None = None
    dataset_args: dict[str, Any] = field(default_factory=dict)
    language: str | None = None

    def identity(self, model: str, judges: Sequence[str] = ()) -> RunIdentity:
        """The run's identity (records.identity) with `model` and `judges` named as it names them."""
        return RunIdentity(model, self.dataset, self.items.fingerprint(), self.strategy.hash,
                           shots_fingerprint(self.shots), tuple(judges), self.combine if judges else "")

    def provenance(self, backend: Backend) -> dict[str, Any]:
        prov = provenance(backend, self.strategy, self.items, self.dataset, self.excluded, self.judges, self.combine)
        prov.update(dataset_args=self.dataset_args, language=self.language)
        if self.skipped:   # what the load left out (it cannot be used), said in the run's provenance
            prov.update(n_skipped_records=len(self.skipped), skipped_records=[str(r) for r in self.skipped])
        return prov


def plan_run(items: ItemSet, strategy: Strategy, dataset: str = "", *, shot_pool: ItemSet | None = None,
             limit: int | None = None, judges: Sequence[LLMJudge] = (), combine: str = "mean",
             dataset_args: dict[str, Any] | None = None, language: str | None = None) -> RunPlan:
    """The RunPlan of `items` under `strategy` (shots reserved, `limit` applied); one clear error for a plan
    that cannot run (unknown combine rule, shot ids missing, a prompt language without templates, no item left).
    `dataset_args` and `language`: how a loader gave `items` (recorded with the run; {} and None for items given by
    hand)."""
    if combine not in COMBINE_RULES:
        raise ValueError(f"combine {combine!r} not in {COMBINE_RULES}")
    available = template_languages()
    missing = sorted({strategy.language or it.exam_language for it in items} - set(available))
    if missing:
        raise ValueError(f"no prompt templates in language(s) {missing} (templates: {available}): ask in one of "
                         "them with the strategy's `language` (e.g. `{base: exams, language: en}` in a params file), "
                         "or add prompts/templates/<language>.yaml")
    if strategy.shots and strategy.shot_rule == "ids" and not strategy.shot_ids:
        raise ValueError("Strategy.shot_rule 'ids' needs shot_ids")
    todo_items, shots = plan_shots(items, strategy, shot_pool)
    excluded = frozenset(set(items.ids) - set(todo_items.ids))
    if limit is not None:
        todo_items = todo_items[:limit]
    if not len(todo_items):
        raise ValueError("no items left to evaluate after excluding few-shot examples")
    return RunPlan(todo_items, strategy, shots, excluded, dataset, tuple(judges), combine, items.skipped, items,
                   dict(dataset_args or {}), language)


def administer(opened: OpenRun, plan: RunPlan, backend: Backend, prov: dict[str, Any],
               progress: bool = True) -> pd.DataFrame:
    """Write every missing record of `plan` into an open run folder (records.state.OpenRun: state decided, lock
    held) and finalise it: run.json, items.jsonl, the records block by block, records.parquet and provenance.json."""
    run_dir, strategy = opened.run_dir, plan.strategy
    prov = opened.start(prov)
    run_dir.write_items(plan.given if plan.given is not None else plan.items)
    run_info = run_fields(run_id=run_dir.name, model=backend.name, dataset=plan.dataset, strategy=strategy.name,
                          strategy_hash=strategy.hash, method=strategy.method, normalization=strategy.normalization,
                          shots=strategy.shots, seed=strategy.seed)
    usage_start = backend.usage()

    def records_of(block: list[Item]) -> list[dict[str, Any]]:
        return block_records(backend, block, strategy, plan.shots, run_info, plan.judges, plan.combine)

    pooled = backend if isinstance(backend, PooledBackend) else None  # a pool's workers score the blocks (run.pool)
    preparing = isinstance(backend, PreparingBackend) and backend.prepare_ahead  # the next block prepared meanwhile

    def score_blocks(todo: list[list[Item]]) -> Iterable[list[dict[str, Any]]]:
        if pooled is not None:
            return pooled.score_blocks(todo, plan, run_info)
        if preparing:
            return ahead(records_of, lambda b: prepare(backend, b, strategy, plan.shots), todo)
        return map(records_of, todo)

    if strategy.adaptive is not None:
        def prompt_for(it: Item, perm: tuple[int, ...], k: int) -> Any:
            return letters_prompt(it, strategy, plan.shots[it.item_id], perm, k)

        def record_of(it: Item, prompt: Any) -> dict[str, Any]:
            pairs, seconds, forwarded = measured(backend, lambda: [(prompt, ask_letters(backend, [prompt], [it],
                                                                                        strategy)[0])])
            return _record(it, prompt, pairs[0][1], run_info, seconds, forwarded)

        run_adaptive(plan.items, strategy, run_dir, prompt_for, record_of, progress)
    else:
        _fixed_form(plan.items, strategy, run_dir, score_blocks, f"{strategy.name} {backend.name}", progress,
                    items_per_call(backend))
    prov["usage"] = usage_delta(usage_start, backend.usage())
    if pooled is not None:  # the Ray pool that scored it: workers, nodes, loads, retries (run.pool)
        prov["pool"] = pooled.pool_info()
    return run_dir.finalize(prov)


def _fixed_form(items: ItemSet, strategy: Strategy, run_dir: RunDir, score_blocks: Any, label: str,
                progress: bool, scoring_items: int = 1) -> None:
    """Every item x shuffle, block by block, skipping finished records.

    A block (one item; `Strategy.block_size` items for padded greedy generation; `scoring_items` items, the
    backend's `items_per_call`, for log-prob methods) is always computed whole, even when a killed run already
    wrote some of its records, so float rounding never depends on where the kill happened; only the missing
    records are written. Blocks are cut from the item list in order, so a resumed run cuts the same blocks.
    `score_blocks(blocks)` gives each block's records in block order (lazily: here one block at a time; a pool's
    workers several at once).
    """
    done = run_dir.done_keys()
    if generates(strategy.method):
        size = strategy.block_size if strategy.temperature == 0 else 1
    else:
        size = scoring_items
    seq = list(items)  # once: slicing list(items) per block copied the whole set per block (quadratic)
    blocks = [seq[i:i + size] for i in range(0, len(seq), size)]
    todo = [b for b in blocks
            if not all((it.item_id, k) in done for it in b for k in range(len(record_permutations(it, strategy))))]
    bar = tqdm(total=len(items), desc=label, disable=not progress, unit="item")
    bar.update(len(items) - sum(len(b) for b in todo))
    for block, records in zip(todo, score_blocks(todo), strict=True):
        new = [r for r in records if (r["item_id"], r["shuffle"]) not in done]
        run_dir.append(new)
        done.update((r["item_id"], r["shuffle"]) for r in new)
        bar.update(len(block))
    bar.close()
