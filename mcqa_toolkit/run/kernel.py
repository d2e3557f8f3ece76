"""KernelRuns: what `mcqa run`'s kernel holds (kept as RUNS between notebooks, run.grid): the grid's BackendCache,
its Ray pool under `--ray`, and the one run folder open now. The grid process calls its methods (run.session
KernelSession.call); the run notebook calls `RUNS.run(job)`.

The kernel is the process that writes a run folder, so it is the one that decides the folder's state and holds
its lock; the grid process only plans and prints. For each combination the grid asks, in this kernel:
- `open(job)`: the job's plan and identity (run.recipe.prepare), then the state decided once (records.state
  check_writable) and, unless the run is complete, once more under the one-writer lock (records.state.locked),
  kept until `close`. The answer is the state, or why the folder cannot be written: it holds another run
  ("refused") or another process is writing it ("locked", with the holder);
- `run(job)`, from the run notebook papermill executes: the model (from the BackendCache or the pool's workers),
  then the records and Min-K% (run.recipe.load_backends, write_run) into the folder opened for it;
- `batch(mode)`: API batch mode's submit or fetch for the open run (run.batch), the same layout as a run;
- `close(notebook)`: the executed notebook (papermill wrote it outside the folder) moved into the folder, then
  summary.json, which marks the run complete (so a complete run always holds its executed notebook; a grid killed
  in between resumes the run, its records all there), still under the lock, which is then released; the run's
  headline numbers back for the grid to print.
A kernel that dies (out of memory) releases the lock with it (flock), and the next call starts a new one.
"""
from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any

from mcqa_toolkit.records.files import atomic
from mcqa_toolkit.records.lock import RunLocked, describe
from mcqa_toolkit.records.state import OpenRun, RunRefused, RunState, check_writable, locked
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import (BackendCache, PreparedRun, RunResult, finish_run, load_backends, prepare,
                                     write_run)

__all__ = ["KernelRuns", "HEADLINE_KEYS"]

HEADLINE_KEYS = ("accuracy", "kappa", "n_items", "shuffles")  # what the grid prints for a finished run


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
        self._prep: PreparedRun | None = None
        self._result: RunResult | None = None
        self._opened: OpenRun | None = None

    def open(self, job: dict[str, Any]) -> dict[str, Any]:
        """Decide the job's run folder and, unless it is complete, hold its lock (module docstring). Returns
        {"state": new | resumable | complete | refused | locked, "why": a sentence for the last two, "summary":
        the headline numbers of a complete run}."""
        self.close()
        j = Job.from_dict(job)
        prep = prepare(j)
        try:
            if check_writable(j.run_dir, prep.identity) is RunState.COMPLETE:
                return {"state": RunState.COMPLETE.value, "summary": _headline(j)}
            opened = self._stack.enter_context(locked(j.run_dir, prep.identity))
        except RunRefused as e:
            return {"state": "refused", "why": str(e)}
        except RunLocked as e:
            return {"state": "locked", "why": describe(e.holder)}
        self._prep, self._opened = prep, opened
        if opened.state is RunState.COMPLETE:  # another process finished it meanwhile
            self.close()
            return {"state": RunState.COMPLETE.value, "summary": _headline(j), "meanwhile": True}
        return {"state": opened.state.value}

    def _open(self, job: Job | None = None) -> tuple[PreparedRun, OpenRun]:
        if self._prep is None or self._opened is None:
            raise RuntimeError("no run folder is open in this kernel (the grid opens one before each run notebook)")
        if job is not None and job != self._prep.job:
            raise RuntimeError(f"the run notebook's job ({job.run_dir.dir}) is not the one opened for it "
                               f"({self._prep.job.run_dir.dir})")
        return self._prep, self._opened

    def run(self, job: Job, progress: bool = True) -> RunResult:
        """The open run (the run notebook's job): its model, then every step run.recipe.write_run does."""
        prep, opened = self._open(job)
        backend, plan = load_backends(prep, self.backends, self.pool)
        self._result = write_run(opened, prep, backend, plan, progress, finish=False)   # summary.json at close
        return self._result

    def batch(self, mode: str) -> dict[str, Any]:
        """API batch mode for the open run (run.batch): "submit" its missing requests, or "fetch" ended batches
        into the request cache. Returns {"lines": what to print, "ready": whether the run can now execute}."""
        from mcqa_toolkit.run import batch

        prep, _ = self._open()
        state = batch.submit(prep.job, self.backends) if mode == "submit" else batch.fetch(prep.job, self.backends)
        return {"lines": batch.describe(prep.job.run_dir.name, state),
                "ready": mode == "fetch" and bool(state.get("ready"))}

    def close(self, notebook: str | None = None) -> dict[str, Any]:
        """Move the executed `notebook` (if given) into the open run folder, write summary.json if the run was
        written, release the lock, and return the run's headline numbers ({} without summary.json: a run that
        failed)."""
        if self._prep is None:
            return {}
        job = self._prep.job
        try:
            if notebook is not None and Path(notebook).exists():
                atomic(job.run_dir.notebook, lambda tmp: shutil.copyfile(notebook, tmp), job.run_dir.notebook.name,
                       "the records are intact")
            if self._result is not None:
                finish_run(self._prep, self._result)
        finally:
            self._stack.close()
            self._prep = self._opened = self._result = None
        return _headline(job)

    def end(self) -> None:
        """Close the open run and the Ray pool (the kernel is about to shut down)."""
        self.close()
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def _headline(job: Job) -> dict[str, Any]:
    """The headline numbers of a finished run ({} when it has no summary.json)."""
    summary = job.run_dir.summary()
    return {k: summary.get(k) for k in HEADLINE_KEYS if k in summary}
