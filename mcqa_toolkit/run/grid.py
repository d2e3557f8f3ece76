"""The grid's execution (`mcqa run`): every combination of a params file runs `notebooks/run_model.ipynb` with
papermill in one shared kernel (run.session), model by model and cheapest strategies first, printing each run's
headline numbers as it finishes.

A run crosses from this process to the kernel only as the notebook's papermill parameters (run.jobs.Job.parameters,
what a researcher passes to `papermill run_model.ipynb -p ...`). The kernel is the process that writes the run
folder, so it decides the folder's state, holds its lock and writes it, through importable code the notebook calls
(run.kernel.notebook_run); it keeps the grid's BackendCache (each model loaded once for the grid) and its Ray pool
between notebooks. This process plans and prints and decides nothing about a folder: papermill writes the executed
notebook to a folder of this process, and a control request (run.session) asks the kernel to copy it into the run
folder, write summary.json and release the lock (run.kernel). What a run did is read back from its folder
afterwards (summary.json; the executed notebook, this grid's when this grid wrote the run; batch.json; run.lock),
and why a notebook failed from papermill's report of the failing cell: a combination another process is running (a
second `mcqa run` on the same params file: RunLocked) is reported as running elsewhere and skipped, a folder holding
another run (RunRefused) as a failure naming what differs; failures are listed at the end and the grid goes on with
the others. A complete run's notebook reads it back, writing nothing. `dry_run_params` (`mcqa run --dry-run`) only
reads the folders (records.state.run_state) and starts no kernel.

With a Ray cluster (`mcqa run --ray ADDRESS [--workers N]`, or a `cluster: {address, workers}` block in the params
file; the command line wins) the pool connects when the kernel starts (an unreachable cluster stops the grid with
one line) and ends before it shuts down; the pool's workers score the items and keep each model loaded across the
grid's runs, and the kernel writes every run folder as before. Batch mode (--batch-submit / --batch-fetch) runs in
the kernel too (run.kernel, its "batch" request), on the run of the same parameters.
"""
from __future__ import annotations

import contextlib
import filecmp
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcqa_toolkit.records.identity import RunIdentity
from mcqa_toolkit.records.lock import describe
from mcqa_toolkit.records.state import RunRefused, RunState, run_state
from mcqa_toolkit.run.jobs import Job, expand, load_params
from mcqa_toolkit.run.kernel import EXTENSION, RUNS, TARGET
from mcqa_toolkit.run.pool import ClusterOptions, cluster_options, require_ray
from mcqa_toolkit.run.preflight import preflight
from mcqa_toolkit.scoring.methods import MIN_K_COST, record_cost

POOL_START_SECONDS = 600  # starting a local cluster, or connecting, on a loaded machine takes tens of seconds


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
                             "which run in the grid's kernel")
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


def _result_line(job: Job) -> str:
    """The headline numbers of a finished run, from its summary.json."""
    summary = job.run_dir.summary()

    def number(key: str) -> float:
        value = summary.get(key)
        return float("nan") if value is None else float(value)

    return (f"accuracy {number('accuracy'):.3f}  kappa {number('kappa'):+.3f}  "
            f"({summary.get('n_items', 0)} items x {summary.get('shuffles', 0)} shuffles)")


@dataclass(frozen=True)
class _Plan:
    """A params file's combinations: those that can start in execution order, those that cannot (with why), their
    identities (run.preflight) and the Ray cluster to run them on."""

    params: dict[str, Any]
    n_jobs: int
    todo: list[Job]
    refused: list[tuple[Job, str]]
    identities: dict[str, RunIdentity]
    cluster: ClusterOptions | None

    def counts(self) -> str:
        return (f", {len(self.refused)} cannot start" if self.refused else "") + (
            f"; on the Ray cluster {self.cluster.address} ({self.cluster.workers} workers per model)"
            if self.cluster else "")


def _plan(path: str | Path, base_dir: Path, batch: str | None, ray: str | None, workers: int | None) -> _Plan:
    """Read and check a params file, expand and preflight its combinations (one line printed for each that cannot
    start; none startable is a ValueError) and order them (schedule)."""
    if batch not in (None, "submit", "fetch"):
        raise ValueError(f"batch must be None, 'submit' or 'fetch', got {batch!r}")
    params = load_params(path)
    try:
        jobs = expand(params, base_dir=base_dir)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    cluster = _cluster(params, path, ray, workers, batch)
    startable, refused, identities = preflight(jobs)
    for job, why in refused:
        print(f"  cannot start {job.run_dir.name}: {why}", flush=True)
    if not startable:
        raise ValueError(f"{path}: none of its {len(jobs)} combinations can start (one line each above)")
    return _Plan(params, len(jobs), schedule(startable), refused, identities, cluster)


def dry_run_params(path: str | Path, base_dir: Path, batch: str | None = None, ray: str | None = None,
                   workers: int | None = None) -> int:
    """What `run_params` would do (`mcqa run --dry-run`), from a read of each run folder (records.state.run_state;
    nothing is decided or written, no kernel starts): the combinations to run; a folder holding another run is a
    failure. Returns the number of failures and refusals."""
    plan = _plan(path, base_dir, batch, ray, workers)
    would, failures = [], []
    for job in plan.todo:
        try:
            if run_state(job.run_dir, plan.identities[job.run_dir.name]) is not RunState.COMPLETE:
                would.append(job)
        except RunRefused as e:
            failures.append((job, str(e)))
    print(f"{plan.n_jobs} combinations, {len(plan.todo) - len(would) - len(failures)} already complete, {len(would)} "
          f"to run{plan.counts()}", flush=True)
    for job in would:
        print("  would run", job.run_dir.name)
    return _report_failures(failures) + len(plan.refused)


@dataclass
class _Tally:
    """What the grid says at the end: failures (job, one line), runs elsewhere, complete and processed counts."""

    failures: list[tuple[Job, str]] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)
    complete: int = 0
    processed: int = 0


def run_params(path: str | Path, notebook: Path, base_dir: Path, kernel: str = "python3", batch: str | None = None,
               ray: str | None = None, workers: int | None = None) -> int:
    """Execute every combination of a params file in one kernel (run.session, run.kernel), printing each
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
    plan = _plan(path, base_dir, batch, ray, workers)
    print(f"{plan.n_jobs} combinations, {len(plan.todo)} to check and run in one kernel{plan.counts()}", flush=True)
    if plan.cluster is not None:
        require_ray()
    t0, width, tally = time.time(), len(str(len(plan.todo))), _Tally()
    with contextlib.ExitStack() as stack:
        session = _start_session(stack, plan.params.get("kernel") or kernel, notebook, plan.cluster)
        executed = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcqa_notebooks_")))
        for n, job in enumerate(plan.todo, start=1):
            t = time.time()
            result = _one(job, session, notebook, executed / f"{job.run_dir.name}.ipynb", batch, tally)
            if result is not None:
                print(f"[{n:>{width}}/{len(plan.todo)}] {time.time() - t:5.0f} s  {job.run_dir.name:<40} {result}",
                      flush=True)
    print(f"done in {time.time() - t0:.0f} s: {tally.processed} processed, {tally.complete} already complete, "
          f"{len(tally.failures)} failed" + (f", {len(tally.elsewhere)} running elsewhere (run again later to pick up "
                                             "what they leave unfinished): " + ", ".join(tally.elsewhere)
                                             if tally.elsewhere else ""))
    return _report_failures(tally.failures) + len(plan.refused)


def _start_session(stack: contextlib.ExitStack, kernel: str, notebook: Path, cluster: ClusterOptions | None) -> Any:
    """The grid's kernel with run.kernel loaded, its KernelRuns started (and the pool connected) by a control
    request whenever the kernel starts, and ended before it shuts down."""
    from mcqa_toolkit.run.session import Control, KernelSession

    options = None if cluster is None else {"address": cluster.address, "workers": cluster.workers}
    try:
        return stack.enter_context(KernelSession(
            kernel, cwd=notebook.parent, keep=(RUNS,), extensions=(EXTENSION,),
            setup=(Control(TARGET, "start", {"cluster": options}),), teardown=(Control(TARGET, "end"),),
            startup_timeout=POOL_START_SECONDS if cluster else 60))
    except RuntimeError as e:  # a ControlError: the pool could not connect
        if cluster is None:
            raise
        raise ValueError(f"Ray cluster {cluster.address}: {getattr(e, 'evalue', e)}") from None


def _one(job: Job, session: Any, notebook: Path, executed: Path, batch: str | None, tally: _Tally) -> str | None:
    """One combination in the kernel: (the batch step, then) the run notebook executed from the job's parameters,
    and the close request; then its folder read (the kernel has checked it holds this run). The line to print (None:
    nothing)."""
    parameters, error, run_now = job.parameters(), None, True
    try:
        if batch is not None:   # the kernel opens the folder of these parameters; the step's state is its batch.json
            from mcqa_toolkit.run.batch import describe as batch_lines

            session.control(TARGET, "batch", mode=batch, parameters=parameters)
            run_now = not job.run_dir.is_complete()   # complete: the kernel found this run done, nothing to batch
            if run_now:
                state = job.run_dir.batch_state()
                print(batch_lines(job.run_dir.name, state), flush=True)
                if not (batch == "fetch" and state.get("ready")):
                    return None
        if run_now:
            session.execute(notebook, executed, parameters, cwd=notebook.parent)
    except Exception as e:  # papermill raises PapermillExecutionError naming the failing cell's exception
        error = e
    try:
        session.control(TARGET, "close", notebook=str(executed))
    except Exception as e:
        error = error or e
    if error is not None:
        return _failed(job, error, tally)
    if not job.run_dir.is_complete():
        tally.failures.append((job, f"the run notebook ended without completing {job.run_dir.dir}"))
        return "failed (see below)"
    if executed.exists() and job.run_dir.notebook.exists() and filecmp.cmp(executed, job.run_dir.notebook, False):
        tally.processed += 1   # the folder holds this grid's executed notebook: its kernel wrote the run
        return _result_line(job)
    tally.complete += 1        # complete before (or by another process meanwhile): the notebook read it back
    return "complete: " + _result_line(job)


def _failed(job: Job, error: Exception, tally: _Tally) -> str:
    """A combination that failed, by the exception the kernel names (papermill's report of the failing cell, or a
    control request's answer): running elsewhere (RunLocked, with the holder its run.lock names), refused
    (RunRefused: the sentence naming what differs), or failed."""
    from papermill.exceptions import PapermillExecutionError

    from mcqa_toolkit.run.session import ControlError

    ename = error.ename if isinstance(error, (PapermillExecutionError, ControlError)) else type(error).__name__
    if ename == "RunLocked":
        tally.elsewhere.append(job.run_dir.name)
        holder = job.run_dir.holder()
        return f"running elsewhere ({describe(holder) if holder else getattr(error, 'evalue', error)}): skipped"
    if ename == "RunRefused":
        tally.failures.append((job, getattr(error, "evalue", str(error))))
    elif isinstance(error, ControlError):
        tally.failures.append((job, f"{error.ename}: {error.evalue}"))
    else:
        lines = str(error).strip().splitlines()
        tally.failures.append((job, f"{type(error).__name__}: {lines[-1] if lines else ''}"))
    return "failed (see below)"


def _report_failures(failures: list[tuple[Job, str]]) -> int:
    for job, msg in failures:
        print(f"  FAILED {job.run_dir.name}: {msg}" + (f"\n    see {job.run_dir.notebook}"
                                                        if job.run_dir.notebook.exists() else ""))
    return len(failures)


__all__ = ["run_params", "schedule", "estimated_cost"]
