"""The grid's execution (`mcqa run`): every incomplete job of a params file runs `notebooks/run_model.ipynb`
with papermill in one shared kernel (run.session), model by model and cheapest strategies first, printing each
run's headline numbers as it finishes.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from mcqa_toolkit.run.jobs import Job, expand, load_params

# Relative wall time of one record (item x shuffle) by method, and of Min-K% per item, measured on Gemma-3-270M
# on 2 CPU cores (the demo's strategies, one language): `mcqa run` starts with the cheapest runs so that the
# first numbers are on screen early. Cloze scores every token of every option (an LM-head call per token);
# generation costs about one unit per new token.
METHOD_COST = {"first_token": 12.0, "cloze": 17.0, "loglik": 17.0, "generate": 1.2}  # generate: x max_new_tokens
MIN_K_COST = 24.0


def estimated_cost(job: Job) -> float:
    """A job's relative cost per item, for ordering only (a strategy that fails to build sorts first: it
    fails at once)."""
    try:
        st = job.build_strategy()
    except ValueError:
        return 0.0
    per_record = METHOD_COST[st.method] * (st.max_new_tokens if st.method == "generate" else 1)
    return per_record * st.shuffles + (MIN_K_COST if job.min_k else 0.0)


def _model_key(job: Job) -> str:
    return f"{job.model} {sorted(job.backend_options.items())}"


def schedule(jobs: list[Job]) -> list[Job]:
    """Execution order: model by model (each model is loaded once), cheapest strategies first, and within
    a strategy the languages in params order, so the first results cover every language early."""
    models = list(dict.fromkeys(_model_key(j) for j in jobs))
    return sorted(jobs, key=lambda j: (models.index(_model_key(j)), estimated_cost(j)))


def execute(job: Job, notebook: Path, session: Any) -> None:
    """Execute the run notebook for one job in a `run.session.KernelSession`; the executed copy is kept in
    the run folder."""
    job.out_dir.mkdir(parents=True, exist_ok=True)
    session.execute(notebook, job.run_dir.notebook, job.parameters(), cwd=notebook.parent)


def _result_line(job: Job) -> str:
    s = job.run_dir.summary()
    return f"accuracy {s.get('accuracy', float('nan')):.3f}  kappa {s.get('kappa', float('nan')):+.3f}  " \
           f"({s.get('n_items', 0)} items x {s.get('shuffles', 0)} shuffles)"


def run_params(path: str | Path, notebook: Path, base_dir: Path, dry_run: bool = False, kernel: str = "python3",
               batch: str | None = None) -> int:
    """Execute every incomplete combination of a params file in one kernel (run.session), printing each
    run's headline numbers as it finishes; failures are collected and reported at the end without stopping
    the others. Returns the number of failures.

    batch="submit" submits each run's missing requests to its backend's batch API (no notebook runs);
    batch="fetch" stores the results of ended batches and executes the runs whose batches have all ended
    (they then run from the request cache). See run.batch.
    """
    if batch not in (None, "submit", "fetch"):
        raise ValueError(f"batch must be None, 'submit' or 'fetch', got {batch!r}")
    params = load_params(path)
    jobs = expand(params, base_dir=base_dir)
    todo = schedule([j for j in jobs if not j.is_complete()])
    print(f"{len(jobs)} combinations, {len(jobs) - len(todo)} already complete, {len(todo)} to run", flush=True)
    if dry_run or not todo:
        for j in todo:
            print("  would run", j.run_dir.name)
        return 0
    failures: list[tuple[Job, str]] = []
    t0 = time.time()
    width = len(str(len(todo)))
    with contextlib.ExitStack() as stack:
        session = None
        for n, job in enumerate(todo, start=1):
            t = time.time()
            try:
                if batch is not None and not _batch_step(job, batch):
                    continue
                if session is None:  # started on first use: `--batch submit` runs no notebook
                    from mcqa_toolkit.run.session import KernelSession

                    session = stack.enter_context(KernelSession(params.get("kernel") or kernel, cwd=notebook.parent,
                                                                keep=("backend",)))
                execute(job, notebook, session)
                result = _result_line(job)
            except Exception as e:  # papermill raises PapermillExecutionError with the cell's traceback
                last = str(e).strip().splitlines()[-1] if str(e).strip() else ""
                failures.append((job, f"{type(e).__name__}: {last}"))
                result = "failed (see below)"
            print(f"[{n:>{width}}/{len(todo)}] {time.time() - t:5.0f} s  {job.run_dir.name:<40} {result}", flush=True)
    print(f"done in {time.time() - t0:.0f} s: {len(todo) - len(failures)} processed, {len(failures)} failed")
    for job, msg in failures:
        print(f"  FAILED {job.run_dir.name}: {msg}\n    see {job.run_dir.notebook}")
    return len(failures)


def _batch_step(job: Job, mode: str) -> bool:
    """Submit or fetch one job's batch and print its state; True when the job should now run from the cache."""
    from mcqa_toolkit.run import batch

    state = batch.submit(job) if mode == "submit" else batch.fetch(job)
    print(batch.describe(job.run_dir.name, state), flush=True)
    return mode == "fetch" and bool(state.get("ready"))


__all__ = ["run_params", "schedule", "estimated_cost", "execute", "METHOD_COST", "MIN_K_COST"]
