"""The grid's execution (`mcqa run`): every combination of a params file runs `notebooks/run_model.ipynb` with
papermill in one shared kernel (run.session), model by model and cheapest strategies first, printing each run's
headline numbers as it finishes. The kernel holds a run.kernel.KernelRuns as RUNS (its BackendCache, so each
model is loaded once for the whole grid, and its Ray pool under --ray), created by calling importable code when
the kernel starts.

This process plans and prints; it never decides a run folder's state nor writes in one. For each combination it
asks the kernel to open the folder (RUNS.open: state, lock, state, all in the kernel, which keeps the lock), then
executes the run notebook there (it calls RUNS.run) with papermill writing the executed copy to a folder of this
process, then asks the kernel to move that copy into the run folder and release the lock (RUNS.close). A
combination another process is running (a second `mcqa run` on the same params file) is reported as running
elsewhere and skipped, a folder holding another run as a failure, a finished one as complete; the grid goes on
with the others. `--dry-run` only reads the folders (records.state.run_state) and starts no kernel.

With a Ray cluster (`mcqa run --ray ADDRESS [--workers N]`, or a `cluster: {address, workers}` block in the params
file; the command line wins) the pool connects when the kernel starts (an unreachable cluster stops the grid with
one line) and ends before it shuts down; the pool's workers score the items and keep each model loaded across the
grid's runs, and the kernel writes every run folder as before. Batch mode (--batch-submit / --batch-fetch) runs in
the kernel too, on the folder it opened (RUNS.batch).
"""
from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from mcqa_toolkit.records.state import RunRefused, RunState, run_state
from mcqa_toolkit.run.jobs import Job, expand, load_params
from mcqa_toolkit.run.pool import ClusterOptions, cluster_options, require_ray
from mcqa_toolkit.run.preflight import preflight
from mcqa_toolkit.scoring.methods import MIN_K_COST, record_cost

RUNS = "RUNS"   # the kernel's run.kernel.KernelRuns, kept between notebooks; the run notebook calls RUNS.run
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


def _result_line(headline: dict[str, Any]) -> str:
    def number(key: str) -> float:
        value = headline.get(key)
        return float("nan") if value is None else float(value)

    return (f"accuracy {number('accuracy'):.3f}  kappa {number('kappa'):+.3f}  "
            f"({headline.get('n_items', 0)} items x {headline.get('shuffles', 0)} shuffles)")


def _dry_run(prepared: list[tuple[Job, Any]], failures: list[tuple[Job, str]]) -> list[Job]:
    """What a run would do, from a read of each folder (records.state.run_state; nothing is decided or written):
    the jobs that would run; a folder holding another run is a failure."""
    todo = []
    for job, identity in prepared:
        try:
            if run_state(job.run_dir, identity) is not RunState.COMPLETE:
                todo.append(job)
        except RunRefused as e:
            failures.append((job, str(e)))
    return todo


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
    cluster = _cluster(params, path, ray, workers, batch)
    try:
        jobs = expand(params, base_dir=base_dir)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    startable, refused, identities = preflight(jobs)
    for job, why in refused:
        print(f"  cannot start {job.run_dir.name}: {why}", flush=True)
    if not startable:
        raise ValueError(f"{path}: none of its {len(jobs)} combinations can start (one line each above)")
    failures: list[tuple[Job, str]] = []
    todo = schedule(startable)
    if dry_run:
        would = _dry_run([(j, identities[j.run_dir.name]) for j in todo], failures)
        print(f"{len(jobs)} combinations, {len(todo) - len(would) - len(failures)} already complete, {len(would)} to "
              "run" + (f", {len(refused)} cannot start" if refused else "") + _where(cluster), flush=True)
        for j in would:
            print("  would run", j.run_dir.name)
        return _report_failures(failures) + len(refused)
    print(f"{len(jobs)} combinations, {len(todo)} to check and run in one kernel"
          + (f", {len(refused)} cannot start" if refused else "")
          + _where(cluster), flush=True)
    if cluster is not None:
        require_ray()
    t0, counts = time.time(), {"complete": 0, "processed": 0}
    width, elsewhere = len(str(len(todo))), []
    with contextlib.ExitStack() as stack:
        session = _start_session(stack, params.get("kernel") or kernel, notebook, cluster)
        executed = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcqa_notebooks_")))
        for n, job in enumerate(todo, start=1):
            t = time.time()
            result = _one(job, session, notebook, executed / f"{job.run_dir.name}.ipynb", batch, failures,
                          elsewhere, counts)
            if result is not None:
                print(f"[{n:>{width}}/{len(todo)}] {time.time() - t:5.0f} s  {job.run_dir.name:<40} {result}",
                      flush=True)
    failed = len(failures)
    print(f"done in {time.time() - t0:.0f} s: {counts['processed']} processed, {counts['complete']} already complete, "
          f"{failed} failed" + (f", {len(elsewhere)} running elsewhere (run again later to pick up what they leave "
                                "unfinished): " + ", ".join(elsewhere) if elsewhere else ""))
    return _report_failures(failures) + len(refused)


def _where(cluster: ClusterOptions | None) -> str:
    return f"; on the Ray cluster {cluster.address} ({cluster.workers} workers per model)" if cluster else ""


def _start_session(stack: contextlib.ExitStack, kernel: str, notebook: Path, cluster: ClusterOptions | None) -> Any:
    """The grid's kernel, its KernelRuns created (and its pool connected) by calling run.kernel there."""
    from mcqa_toolkit.run.session import KernelCall, KernelSession

    options = None if cluster is None else {"address": cluster.address, "workers": cluster.workers}
    try:
        return stack.enter_context(KernelSession(
            kernel, cwd=notebook.parent, keep=(RUNS,), setup=(KernelCall("mcqa_toolkit.run.kernel:KernelRuns",
                                                                          (options,), into=RUNS),),
            teardown=(KernelCall(f"{RUNS}.end"),), startup_timeout=POOL_START_SECONDS if cluster else 60))
    except RuntimeError as e:  # a KernelCallError: the pool could not connect
        if cluster is None:
            raise
        raise ValueError(f"Ray cluster {cluster.address}: {getattr(e, 'evalue', e)}") from None


def _one(job: Job, session: Any, notebook: Path, executed: Path, batch: str | None,
         failures: list[tuple[Job, str]], elsewhere: list[str], counts: dict[str, int]) -> str | None:
    """One combination in the kernel: open, (batch step,) execute, close. The line to print (None: nothing)."""
    from mcqa_toolkit.run.session import KernelCallError

    try:
        opened = session.call(f"{RUNS}.open", job.to_dict())
    except KernelCallError as e:
        failures.append((job, f"{e.ename}: {e.evalue}"))
        return "failed (see below)"
    state = opened["state"]
    if state == "complete":
        counts["complete"] += 1
        return ("completed elsewhere meanwhile: " if opened.get("meanwhile") else "complete: ") + \
            _result_line(opened["summary"])
    if state == "locked":
        elsewhere.append(job.run_dir.name)
        return f"running elsewhere ({opened['why']}): skipped"
    if state == "refused":
        failures.append((job, opened["why"]))
        return "failed (see below)"
    try:
        if batch is not None:
            step = session.call(f"{RUNS}.batch", batch)
            print(step["lines"], flush=True)
            if not step["ready"]:
                session.call(f"{RUNS}.close")
                return None
        try:
            session.execute(notebook, executed, job.parameters(), cwd=notebook.parent)
        finally:
            headline = session.call(f"{RUNS}.close", str(executed))
        counts["processed"] += 1
        return _result_line(headline)
    except Exception as e:  # papermill raises PapermillExecutionError with the cell's traceback
        with contextlib.suppress(Exception):  # a dead kernel released the lock with it
            session.call(f"{RUNS}.close")
        last = str(e).strip().splitlines()[-1] if str(e).strip() else ""
        failures.append((job, f"{type(e).__name__}: {last}"))
        return "failed (see below)"


def _report_failures(failures: list[tuple[Job, str]]) -> int:
    for job, msg in failures:
        print(f"  FAILED {job.run_dir.name}: {msg}" + (f"\n    see {job.run_dir.notebook}"
                                                        if job.run_dir.notebook.exists() else ""))
    return len(failures)


__all__ = ["run_params", "schedule", "estimated_cost", "RUNS"]
