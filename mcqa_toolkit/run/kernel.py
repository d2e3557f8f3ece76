"""The run notebook's kernel: the process that opens, locks, writes and closes a run folder, from the notebook's
papermill parameters alone (run.jobs.Job.from_parameters).

The run notebook calls `notebook_run(globals())`. Run by hand (papermill or Jupyter), that is run.recipe.run_job:
every step, summary.json included, the model loaded for this run. Under `mcqa run` (run.grid) the kernel serves the
whole grid and holds a KernelRuns as RUNS, a name the session keeps between notebooks (run.session): the grid's
BackendCache (each model loaded once for the grid), its Ray pool under `--ray`, and the run folder open now. Then
`notebook_run` is `RUNS.run(job)`: the folder opened (records.state.open_for_write: state, lock, state), the model
loaded (from the BackendCache or the pool's workers) and the records and Min-K% written, the lock kept for what
follows the notebook. A folder holding another run (RunRefused) or being written by another process (RunLocked)
fails the notebook's cell, so papermill names the exception to the grid.

The grid then sends control requests (run.session.Control, JSON) to TARGET, served here by importable code loaded
as the kernel's extension when it starts:
- "start" {cluster}: RUNS created (and the Ray pool connected) whenever a kernel starts; "end": the pool closed;
- "close" {notebook}: the executed notebook (papermill wrote it outside the folder) copied into the folder opened
  for it, then summary.json, which marks the run complete (so a complete run always holds its executed notebook; a
  grid killed in between resumes the run, its records all there), then the lock released;
- "batch" {mode, parameters}: API batch mode's submit or fetch (run.batch) for the run of those parameters, its
  folder opened as for a run and closed at once; the state is the folder's batch.json.
Nothing comes back but an acknowledgement: the grid reads what a run did from its folder. A kernel that dies (out
of memory) releases the lock with it (flock), and the next request starts a new one.
"""
from __future__ import annotations

import contextlib
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcqa_toolkit.records.files import atomic
from mcqa_toolkit.records.state import OpenRun, RunState, open_for_write
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import BackendCache, RunResult, load_backends, prepare, run_job, stored, write_run

__all__ = ["KernelRuns", "notebook_run", "RUNS", "TARGET", "EXTENSION"]

RUNS = "RUNS"                   # the kernel's KernelRuns under `mcqa run`, kept between notebooks
TARGET = "mcqa_toolkit.runs"    # the control target this module serves in the kernel
EXTENSION = __name__            # the module the grid's kernel loads at start (load_ipython_extension)


def notebook_run(parameters: Mapping[str, Any]) -> RunResult:
    """The run of the notebook's papermill parameters (the notebook's globals()): RUNS.run under `mcqa run`,
    run.recipe.run_job when the notebook runs alone."""
    job = Job.from_parameters(parameters)
    runs = parameters.get(RUNS)
    return runs.run(job) if isinstance(runs, KernelRuns) else run_job(job)


class KernelRuns:
    """See the module docstring. `cluster`: {address, workers} of a Ray cluster (run.pool.ClusterOptions), or None."""

    def __init__(self, cluster: dict[str, Any] | None = None):
        self.backends = BackendCache()
        self.pool: Any = None
        if cluster is not None:
            from mcqa_toolkit.run.pool import RayPool

            self.pool = RayPool(cluster["address"], cluster["workers"])
            self.pool.connect()
        self._stack = contextlib.ExitStack()
        self._opened: OpenRun | None = None
        self._result: RunResult | None = None

    def run(self, job: Job, progress: bool = True) -> RunResult:
        """The notebook's run: its folder opened (records.state.open_for_write), its model loaded and its records
        written, the lock kept until `close`; a complete run is read back and nothing is kept open."""
        self.close()
        prep = prepare(job)
        opened = self._stack.enter_context(open_for_write(job.run_dir, prep.identity))
        if opened.state is RunState.COMPLETE:  # finished before, or by another process meanwhile
            self._stack.close()
            return stored(job, opened.state)
        self._opened = opened
        backend, plan = load_backends(prep, self.backends, self.pool)
        self._result = write_run(opened, prep, backend, plan, progress, finish=False)   # summary.json at close
        return self._result

    def close(self, notebook: str | None = None) -> None:
        """Copy the executed `notebook` (if given) into the open run folder, write summary.json if the run was
        written, and release the lock; nothing when no run is open."""
        if self._opened is None:
            return
        opened, result = self._opened, self._result
        try:
            if notebook is not None and Path(notebook).exists():
                target = opened.run_dir.notebook
                atomic(target, lambda tmp: shutil.copyfile(notebook, tmp), target.name, "the records are intact")
            if result is not None:
                opened.complete(result.summary)
        finally:
            self._stack.close()
            self._opened = self._result = None

    def batch(self, job: Job, mode: str) -> None:
        """API batch mode for the job's run (run.batch): "submit" its missing requests, or "fetch" ended batches
        into the request cache; the state goes to the folder's batch.json. Nothing for a complete run."""
        from mcqa_toolkit.run import batch

        if mode not in ("submit", "fetch"):
            raise ValueError(f"batch mode must be 'submit' or 'fetch', got {mode!r}")
        self.close()
        with open_for_write(job.run_dir, prepare(job).identity) as opened:
            if opened.state is not RunState.COMPLETE:
                (batch.submit if mode == "submit" else batch.fetch)(job, self.backends)

    def end(self) -> None:
        """Close the open run and the Ray pool (the kernel is about to shut down)."""
        self.close()
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def load_ipython_extension(ip: Any) -> None:
    """Loaded by `mcqa run`'s kernel when it starts (run.grid): the control requests of the module docstring."""
    from mcqa_toolkit.run.session import serve  # papermill and jupyter_client: the kernel's side only

    def start(cluster: dict[str, Any] | None = None) -> None:
        if isinstance(ip.user_ns.get(RUNS), KernelRuns):
            ip.user_ns[RUNS].end()
        ip.user_ns[RUNS] = KernelRuns(cluster)

    def runs() -> KernelRuns:
        held = ip.user_ns.get(RUNS)
        if not isinstance(held, KernelRuns):
            raise RuntimeError(f"no {RUNS} in this kernel: the session did not start it")
        return held

    serve(ip, TARGET, {"start": start, "end": lambda: runs().end(),
                       "close": lambda notebook=None: runs().close(notebook),
                       "batch": lambda mode, parameters: runs().batch(Job.from_parameters(parameters), mode)})
