"""run_job(): every step of one run, in one function that the run notebook, batch mode and Python users all call.

    from mcqa_toolkit.run.jobs import Job
    from mcqa_toolkit.run.recipe import BackendCache, run_job
    backends = BackendCache()                      # load each model once for many runs
    result = run_job(Job("gemma-3-270m", "demo", {}, "pt", "S5", Path("outputs/pt_S5")), backends)

The steps (prepare, load_backends, write_run; run_job does them in a row): build the strategy, load the items and
plan the run (shots, limit), which gives the run's identity (records.identity.RunIdentity); open the run folder
through records.state.open_for_write, the one sequence every writer uses: the state decided (a finished run is
returned as it is, another run is refused, a run another process is writing now stops at once with RunLocked),
then the backends of the model and its judges loaded and what they cannot serve refused (run.dispatch.check_plan,
and Min-K% without log-probs of given text), both before any file is written, then the one-writer lock taken and
the state decided once more; administer (run.runner.administer: run.json, items.jsonl, resumable records and
provenance); summarise; measure Min-K% prob of the evaluated questions; write summary.json (OpenRun.complete), the
step that marks the run complete. The lock is held from the second decision to summary.json. Under `mcqa run` the
grid's kernel (run.kernel) does the same steps with the last one deferred until the executed notebook is in the
folder.

With a pool (run.pool.RayPool, `mcqa run --ray`), a local model (and its judges) is loaded by the pool's workers
instead of this process, and its items are scored there; everything else, the run folder included, stays here.
A model behind an API keeps running here (run.pool.RayPool.serves says which).
"""
from __future__ import annotations

import dataclasses
import gc
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mcqa_toolkit.backends import Backend, backend_entry, load_backend
from mcqa_toolkit.backends.base import RenewableBackend
from mcqa_toolkit.datasets import load_items
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.summary import summarize_run
from mcqa_toolkit.records.identity import RunIdentity, model_name, spec_name
from mcqa_toolkit.records.state import OpenRun, RunState, open_for_write
from mcqa_toolkit.run.dispatch import check_plan
from mcqa_toolkit.run.jobs import Job, model_label
from mcqa_toolkit.run.runner import RunPlan, administer, plan_run
from mcqa_toolkit.scoring.judge import LLMJudge
from mcqa_toolkit.scoring.methods import MIN_K, check_need
from mcqa_toolkit.scoring.min_k import min_k_table

__all__ = ["BackendCache", "RunResult", "PreparedRun", "prepare", "load_backends", "write_run", "stored", "run_job",
           "HEADLINE"]

HEADLINE = ("n_items", "accuracy", "kappa", "points_earned", "points_possible", "unanswered", "refused", "error")


class BackendCache:
    """The loaded backends of one session, by their complete entry (backends.backend_entry), so that a grid of
    runs loads each model once. Whoever runs many jobs creates one and passes it to every run_job: the
    `mcqa run` kernel's run.kernel.KernelRuns holds one, a Python user makes their own. There is no
    module-level instance.

    For every run, `for_run` renews the backends it returns (fresh KV caches and token counters: the records
    are those of a fresh load) and releases the backends the run does not use, so a grid over several large
    models holds one model (plus its judges) at a time."""

    def __init__(self) -> None:
        self._loaded: dict[str, Backend] = {}

    @staticmethod
    def key(entry: dict[str, Any]) -> str:
        return json.dumps(entry, sort_keys=True, default=str)

    def __len__(self) -> int:
        return len(self._loaded)

    def __contains__(self, entry: dict[str, Any]) -> bool:
        """Whether the backend of this complete entry is loaded (for_run would renew it, not load it)."""
        return self.key(entry) in self._loaded

    def put(self, spec: str | dict[str, Any], backend: Backend) -> None:
        """Use an already-built `backend` for the model `spec` (e.g. one loaded by hand, or a test backend)."""
        self._loaded[self.key(backend_entry(spec))] = backend

    def for_run(self, entries: Sequence[dict[str, Any]]) -> list[Backend]:
        """One backend per complete entry, in order; equal entries get the same object."""
        keys = [self.key(e) for e in entries]
        for k in [k for k in self._loaded if k not in keys]:
            del self._loaded[k]
        gc.collect()  # free the released weights before loading others
        fresh: dict[str, Backend] = {}
        for k, entry in zip(keys, entries, strict=True):
            if k not in fresh:
                old = self._loaded.get(k)
                fresh[k] = (load_backend(entry) if old is None else old.renew() if isinstance(old, RenewableBackend)
                            else old)
                self._loaded[k] = fresh[k]
        return [fresh[k] for k in keys]


@dataclass(frozen=True)
class RunResult:
    """What one run produced: its records, headline summary, Min-K% table (None when not measured) and the
    state its folder was in when run_job started (NEW, RESUMABLE or COMPLETE: then nothing was computed)."""

    job: Job
    state: RunState
    records: pd.DataFrame
    summary: dict[str, Any]
    min_k: pd.DataFrame | None

    @property
    def provenance(self) -> dict[str, Any]:
        """What produced the records (run.runner.provenance, with token usage), as written in the run folder."""
        return self.job.run_dir.provenance()

    def headline(self) -> dict[str, Any]:
        """The headline numbers (HEADLINE), rounded to 4 decimals."""
        return {k: None if self.summary.get(k) is None else round(self.summary[k], 4) for k in HEADLINE}


def stored(job: Job, state: RunState) -> RunResult:
    """The RunResult of a finished run folder, read back."""
    rd = job.run_dir
    min_k = pd.read_parquet(rd.min_k_file) if rd.min_k_file.exists() else None
    return RunResult(job, state, rd.load(), rd.summary(), min_k)


@dataclass(frozen=True)
class PreparedRun:
    """What one job will run, known before its model is loaded: its strategy, its plan (items, shots, limit) and
    its identity (records.identity: model and judges as the job names them)."""

    job: Job
    plan: RunPlan
    identity: RunIdentity


def prepare(job: Job, load: Callable[[str, dict[str, Any], str | None], ItemSet] = load_items) -> PreparedRun:
    """The job's plan and identity: its strategy built, its items and shot pool loaded by `load` (datasets.load_items;
    run.preflight passes one that loads each dataset once for a whole grid). A shot pool that does not load is a
    ValueError saying so."""
    pool = None
    if job.shot_pool is not None:
        try:
            pool = load(job.shot_pool["name"], job.shot_pool.get("args") or {}, job.language)
        except (ValueError, FileNotFoundError, OSError, ImportError) as e:
            raise ValueError(f"shot_pool: {e}") from None
    plan = plan_run(load(job.dataset, job.dataset_args, job.language), job.build_strategy(), job.dataset,
                    shot_pool=pool, limit=job.limit, combine=job.judge_combine, dataset_args=job.dataset_args,
                    language=job.language)
    model = model_name(job.backend_options.get("backend", "hf"), job.model)
    return PreparedRun(job, plan, plan.identity(model, [spec_name(j) for j in job.judges or ()]))


def load_backends(prep: PreparedRun, backends: BackendCache | None = None, pool: Any = None) -> tuple[Backend, RunPlan]:
    """The job's model backend and its plan with the judges on their backends, from the pool's workers (a local
    model with a pool), the session's BackendCache, or a fresh load; what they cannot serve is refused here, before
    any file is written (Min-K% without log-probs of given text, run.dispatch.check_plan)."""
    job = prep.job
    judge_specs = list(job.judges or [])
    entries = [backend_entry(spec, device=job.device, dtype=job.dtype) for spec in [job.model_entry(), *judge_specs]]
    source = pool if pool is not None and pool.serves(entries[0]) else backends
    backend, *judge_backends = (source if source is not None else BackendCache()).for_run(entries)
    if job.min_k:
        check_need(backend, MIN_K, "min_k")
    plan = dataclasses.replace(prep.plan, judges=tuple(LLMJudge(b, name=model_label(spec))
                                                       for b, spec in zip(judge_backends, judge_specs, strict=True)))
    check_plan(plan.items, backend, plan.strategy, plan.judges)
    return backend, plan


def write_run(opened: OpenRun, prep: PreparedRun, backend: Backend, plan: RunPlan, progress: bool = True, *,
              finish: bool = True) -> RunResult:
    """Into a folder opened for writing (records.state.open_for_write: decided, lock held): the records
    (run.runner.administer), the Min-K% table, and summary.json, the step that marks the run complete (`finish`;
    False leaves it to the caller's OpenRun.complete, once what must precede it is in the folder: `mcqa run`'s
    executed notebook, run.kernel)."""
    job = prep.job
    records = administer(opened, plan, backend, plan.provenance(backend), progress)
    summary = summarize_run(records)
    min_k = None
    if job.min_k:
        min_k = min_k_table(backend, plan.items.filter(item_id=set(records["item_id"])))
        job.run_dir.write_min_k(min_k)
        summary["min_k_prob_mean"] = float(min_k["min_k_prob"].mean())
    result = RunResult(job, opened.state, records, summary, min_k)
    if finish:
        opened.complete(summary)
    return result


def run_job(job: Job, backends: BackendCache | None = None, *, progress: bool = True, pool: Any = None) -> RunResult:
    """Every step of one run (see the module docstring); resumable, and a no-op on a finished run.
    `backends`: the session's BackendCache (None: a fresh one, i.e. the model is loaded for this run).
    `pool`: the session's run.pool.RayPool (None: everything in this process)."""
    prep = prepare(job)
    with open_for_write(job.run_dir, prep.identity, lambda: load_backends(prep, backends, pool)) as opened:
        if opened.state is RunState.COMPLETE:  # finished before (no model loaded), or meanwhile by another process
            return stored(job, opened.state)
        backend, plan = opened.prepared
        return write_run(opened, prep, backend, plan, progress)
