"""The grid's execution (`mcqa run`): every combination of a params file runs `notebooks/run_model.ipynb` with
papermill in one shared kernel (run.session), model by model and cheapest strategies first, printing each run's
headline numbers as it finishes.

A run crosses from this process to the kernel only as the notebook's papermill parameters (run.jobs.Job.parameters,
what a researcher passes to `papermill run_model.ipynb -p ...`). The kernel is the process that writes the run
folder, so it decides the folder's state, holds its lock and writes it, through importable code the notebook calls
(run.kernel.notebook_run); it keeps the grid's BackendCache (each model loaded once for the grid) and its Ray pool
between notebooks. This process plans and prints: papermill writes the executed notebook to a folder of this
process, and a control request (run.session) asks the kernel to copy it into the run folder, write summary.json and
release the lock (run.kernel). What a run did is read back from its folder (summary.json, batch.json, run.lock),
and why a notebook failed from papermill's report of the failing cell: a combination another process is running (a
second `mcqa run` on the same params file: RunLocked) is reported as running elsewhere and skipped, a folder holding
another run (RunRefused) as a failure naming what differs; failures are listed at the end and the grid goes on with
the others. A combination whose folder already holds the complete run is read, not executed. `--dry-run` only
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


def _states(jobs: list[Job], identities: dict[str, RunIdentity]) -> dict[str, RunState | RunRefused]:
    """What each job's folder holds, from a read (records.state.run_state; nothing is decided or written): its
    state, or the RunRefused of a folder holding another run. The dry run reports them; the grid reads the complete
    runs instead of executing them and leaves every other decision to the kernel."""
    states: dict[str, RunState | RunRefused] = {}
    for job in jobs:
        try:
            states[job.run_dir.name] = run_state(job.run_dir, identities[job.run_dir.name])
        except RunRefused as e:
            states[job.run_dir.name] = e
    return states


@dataclass
class _Tally:
    """What the grid says at the end: failures (job, one line), runs elsewhere, complete and processed counts."""

    failures: list[tuple[Job, str]] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)
    complete: int = 0
    processed: int = 0


def run_params(path: str | Path, notebook: Path, base_dir: Path, dry_run: bool = False, kernel: str = "python3",
               batch: str | None = None, ray: str | None = None, workers: int | None = None) -> int:
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
    todo = schedule(startable)
    states, tally = _states(todo, identities), _Tally()
    if dry_run:
        tally.failures = [(j, str(states[j.run_dir.name])) for j in todo if isinstance(states[j.run_dir.name], RunRefused)]
        would = [j for j in todo if isinstance(states[j.run_dir.name], RunState) and states[j.run_dir.name] is not
                 RunState.COMPLETE]
        print(f"{len(jobs)} combinations, {len(todo) - len(would) - len(tally.failures)} already complete, {len(would)} "
              "to run" + (f", {len(refused)} cannot start" if refused else "") + _where(cluster), flush=True)
        for j in would:
            print("  would run", j.run_dir.name)
        return _report_failures(tally.failures) + len(refused)
    print(f"{len(jobs)} combinations, {len(todo)} to check and run in one kernel"
          + (f", {len(refused)} cannot start" if refused else "") + _where(cluster), flush=True)
    if cluster is not None:
        require_ray()
    t0, width = time.time(), len(str(len(todo)))
    with contextlib.ExitStack() as stack:
        session = _start_session(stack, params.get("kernel") or kernel, notebook, cluster)
        executed = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcqa_notebooks_")))
        for n, job in enumerate(todo, start=1):
            t = time.time()
            if states[job.run_dir.name] is RunState.COMPLETE:   # read, not executed
                tally.complete += 1
                result: str | None = "complete: " + _result_line(job)
            else:
                result = _one(job, session, notebook, executed / f"{job.run_dir.name}.ipynb", batch, tally)
            if result is not None:
                print(f"[{n:>{width}}/{len(todo)}] {time.time() - t:5.0f} s  {job.run_dir.name:<40} {result}",
                      flush=True)
    print(f"done in {time.time() - t0:.0f} s: {tally.processed} processed, {tally.complete} already complete, "
          f"{len(tally.failures)} failed" + (f", {len(tally.elsewhere)} running elsewhere (run again later to pick up "
                                             "what they leave unfinished): " + ", ".join(tally.elsewhere)
                                             if tally.elsewhere else ""))
    return _report_failures(tally.failures) + len(refused)


def _where(cluster: ClusterOptions | None) -> str:
    return f"; on the Ray cluster {cluster.address} ({cluster.workers} workers per model)" if cluster else ""


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
    and the close request; then its folder read. The line to print (None: nothing)."""
    parameters = job.parameters()
    error: Exception | None = None
    try:
        if batch is not None:   # its state is the folder's batch.json
            from mcqa_toolkit.run.batch import describe as batch_lines

            session.control(TARGET, "batch", mode=batch, parameters=parameters)
            state = job.run_dir.batch_state()
            print(batch_lines(job.run_dir.name, state), flush=True)
            if not (batch == "fetch" and state.get("ready")):
                return None
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
        tally.processed += 1
        return _result_line(job)
    tally.complete += 1  # its folder holds another process's notebook: that process finished it
    return "completed elsewhere meanwhile: " + _result_line(job)


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
