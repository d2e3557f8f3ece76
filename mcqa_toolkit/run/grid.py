"""The grid's execution (`mcqa run`): every incomplete job of a params file runs `notebooks/run_model.ipynb`
with papermill in one shared kernel (run.session), model by model and cheapest strategies first, printing each
run's headline numbers as it finishes. The notebook calls run.recipe.run_job with the kernel's BackendCache
(BACKENDS), so each model is loaded once for the whole grid.

Each combination's run folder is opened for writing (records.state.open_for_write: state, lock, state) while
its notebook runs, and the kernel runs under that lock (records.lock: lender): a combination another process
is running (a second `mcqa run` on the same params file) is reported as running elsewhere and skipped, and
the grid goes on with the others; one finished elsewhere meanwhile is only read back.

With a Ray cluster (`mcqa run --ray ADDRESS [--workers N]`, or a `cluster: {address, workers}` block in the params
file; the command line wins) the kernel also holds a run.pool.RayPool as POOL, connected when the kernel starts
(an unreachable cluster stops the grid with one line) and ended before it shuts down: the run notebook passes it
to run_job, the pool's workers score the items and keep each model loaded across the grid's runs, and the
kernel writes every run folder as before.
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from mcqa_toolkit.run.jobs import Job, expand, load_params
from mcqa_toolkit.run.pool import ClusterOptions, cluster_options, require_ray
from mcqa_toolkit.run.preflight import preflight
from mcqa_toolkit.records.lock import LENDER_ENV, RunLocked, describe
from mcqa_toolkit.records.state import RunRefused, RunState, open_for_write, run_state
from mcqa_toolkit.scoring.methods import MIN_K_COST, record_cost

# The kernel's BackendCache (run.recipe), created once per `mcqa run` and kept between notebooks; the run
# notebook passes it to run_job.
BACKENDS = "BACKENDS"
_SETUP = f"from mcqa_toolkit.run.recipe import BackendCache\n{BACKENDS} = BackendCache()"
# The kernel's RayPool (run.pool) under `mcqa run --ray`, beside BACKENDS; the run notebook passes it to run_job.
POOL = "POOL"
POOL_START_SECONDS = 600  # starting a local cluster, or connecting, on a loaded machine takes tens of seconds


def _kernel_code(cluster: ClusterOptions | None) -> tuple[str, str]:
    """(setup, teardown) code of the grid's kernel: its BackendCache, and its RayPool when a cluster is asked for."""
    if cluster is None:
        return _SETUP, ""
    return (f"{_SETUP}\nfrom mcqa_toolkit.run.pool import RayPool\n{POOL} = RayPool({cluster.address!r}, "
            f"{cluster.workers!r})\n{POOL}.connect()", f"{POOL}.close()")


def _cluster(params: dict[str, Any], path: str | Path, ray: str | None, workers: int | None,
             batch: str | None) -> ClusterOptions | None:
    """The Ray cluster of this `mcqa run` (the params file's block, --ray / --workers over it), checked: one
    clear ValueError for a bad address or worker count, or --ray with batch mode (which starts no pool)."""
    try:
        block = cluster_options(params.get("cluster"))
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    base = {"address": block.address, "workers": block.workers} if block is not None else None
    cluster = cluster_options(base, ray, workers)
    if batch is not None:
        if ray is not None or workers is not None:
            raise ValueError("--ray / --workers and batch mode do not combine: batch mode is for models behind an API, "
                             "which run in this process")
        return None
    return cluster


def estimated_cost(job: Job) -> float:
    """A job's relative cost per item (scoring.methods), for ordering only (a strategy that fails to build
    sorts first: it fails at once)."""
    try:
        st = job.build_strategy()
    except ValueError:
        return 0.0
    return record_cost(st.method, st.max_new_tokens) * st.shuffles + (MIN_K_COST if job.min_k else 0.0)


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


def _pending(jobs: list[Job], failures: list[tuple[Job, str]]) -> list[Job]:
    """The jobs whose run folder is not complete (records.state); a folder holding another run is a failure."""
    todo = []
    for job in jobs:
        try:
            if run_state(job.run_dir, {"job": job.identity()}) is not RunState.COMPLETE:
                todo.append(job)
        except RunRefused as e:
            failures.append((job, str(e)))
    return todo


def run_params(path: str | Path, notebook: Path, base_dir: Path, dry_run: bool = False, kernel: str = "python3",
               batch: str | None = None, ray: str | None = None, workers: int | None = None) -> int:
    """Execute every incomplete combination of a params file in one kernel (run.session), printing each
    run's headline numbers as it finishes; failures are collected and reported at the end without stopping
    the others. Combinations that cannot start (run.preflight: strategy, dataset and language, shots) are
    refused first, one line each, before any kernel or run folder; none startable is a ValueError. Returns the
    number of failures and refusals.

    batch="submit" submits each run's missing requests to its backend's batch API (no notebook runs);
    batch="fetch" stores the results of ended batches and executes the runs whose batches have all ended
    (they then run from the request cache). See run.batch.

    ray / workers: the Ray cluster whose workers score the runs' items (run.pool; over the params file's `cluster`
    block), connected once when the kernel starts.
    """
    if batch not in (None, "submit", "fetch"):
        raise ValueError(f"batch must be None, 'submit' or 'fetch', got {batch!r}")
    params = load_params(path)
    cluster = _cluster(params, path, ray, workers, batch)
    try:
        jobs = expand(params, base_dir=base_dir)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    startable, refused = preflight(jobs)
    for job, why in refused:
        print(f"  cannot start {job.run_dir.name}: {why}", flush=True)
    if not startable:
        raise ValueError(f"{path}: none of its {len(jobs)} combinations can start (one line each above)")
    failures: list[tuple[Job, str]] = []
    todo = schedule(_pending(startable, failures))   # failures: folders holding another run
    complete = len(startable) - len(todo) - len(failures)
    print(f"{len(jobs)} combinations, {complete} already complete, {len(todo)} to run"
          + (f", {len(refused)} cannot start" if refused else "")
          + (f"; on the Ray cluster {cluster.address} ({cluster.workers} workers per model)" if cluster else ""),
          flush=True)
    if dry_run or not todo:
        for j in todo:
            print("  would run", j.run_dir.name)
        return _report_failures(failures) + len(refused)
    t0, n_before = time.time(), len(failures)
    width = len(str(len(todo)))
    elsewhere: list[str] = []
    setup, teardown = _kernel_code(cluster)
    with contextlib.ExitStack() as stack:
        session, backends = None, None

        def start_session() -> Any:
            from mcqa_toolkit.run.session import KernelSession

            return stack.enter_context(KernelSession(
                params.get("kernel") or kernel, cwd=notebook.parent, keep=(BACKENDS, POOL), setup=setup,
                teardown=teardown, env={LENDER_ENV: str(os.getpid())},
                startup_timeout=POOL_START_SECONDS if cluster else 60))

        if cluster is not None:  # the pool connects now: an unreachable cluster stops the grid with one line
            require_ray()
            try:
                session = start_session()
            except RuntimeError as e:
                raise ValueError(f"Ray cluster {cluster.address}: {e}") from None
        for n, job in enumerate(todo, start=1):
            t = time.time()
            try:  # state, lock, state (records.state.open_for_write); the kernel runs under the lock (lender)
                with open_for_write(job.run_dir, {"job": job.identity()}) as folder:
                    if folder.state is RunState.COMPLETE:
                        result = "completed elsewhere meanwhile: " + _result_line(job)
                    else:
                        if batch is not None:
                            if backends is None:
                                from mcqa_toolkit.run.recipe import BackendCache

                                backends = BackendCache()
                            if not _batch_step(job, batch, backends):
                                continue
                        if session is None:  # started on first use: `--batch-submit` runs no notebook
                            session = start_session()
                        execute(job, notebook, session)
                        result = _result_line(job)
            except RunLocked as e:
                elsewhere.append(job.run_dir.name)
                result = f"running elsewhere ({describe(e.holder)}): skipped"
            except Exception as e:  # papermill raises PapermillExecutionError with the cell's traceback
                last = str(e).strip().splitlines()[-1] if str(e).strip() else ""
                failures.append((job, f"{type(e).__name__}: {last}"))
                result = "failed (see below)"
            print(f"[{n:>{width}}/{len(todo)}] {time.time() - t:5.0f} s  {job.run_dir.name:<40} {result}", flush=True)
    failed = len(failures) - n_before
    print(f"done in {time.time() - t0:.0f} s: {len(todo) - failed - len(elsewhere)} processed, {failed} failed"
          + (f", {len(elsewhere)} running elsewhere (run again later to pick up what they leave unfinished): "
             + ", ".join(elsewhere) if elsewhere else ""))
    return _report_failures(failures) + len(refused)


def _report_failures(failures: list[tuple[Job, str]]) -> int:
    for job, msg in failures:
        print(f"  FAILED {job.run_dir.name}: {msg}" + (f"\n    see {job.run_dir.notebook}"
                                                        if job.run_dir.notebook.exists() else ""))
    return len(failures)


def _batch_step(job: Job, mode: str, backends: Any) -> bool:
    """Submit or fetch one job's batch and print its state; True when the job should now run from the cache."""
    from mcqa_toolkit.run import batch

    state = batch.submit(job, backends) if mode == "submit" else batch.fetch(job, backends)
    print(batch.describe(job.run_dir.name, state), flush=True)
    return mode == "fetch" and bool(state.get("ready"))


__all__ = ["run_params", "schedule", "estimated_cost", "execute", "BACKENDS", "POOL"]
