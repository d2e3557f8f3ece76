"""The one place that decides what a run folder holds (nothing yet, a run to resume, a finished run, or another
run that must not be mixed with this one), and the one way into a folder for writing it.

`run_state(run_dir, identity)` compares a records.identity.RunIdentity with the one the folder's run.json recorded
when its run started (records.identity.recorded_identity reads folders written before RunIdentity too): a field
that differs refuses the folder (RunRefused, one sentence naming the fields), and so does a folder holding output
but no run.json (RunDir.held_output). COMPLETE is the folder's `is_complete`: RunDir.is_complete, the one definition
of a complete run (records compacted and summary.json written: what a report needs), or AuditDir.is_complete
(records.audit_dir), the one definition of a complete contamination audit (every step asked of it done).

Every writer of a run folder (run.recipe, `mcqa run`'s kernel in run.kernel, run.runner.run, interop imports; and
contamination.audit, of an audit folder) opens it through `open_for_write(run_dir, identity, before_lock)`, the one
sequence:
1. check: the state decided once, without the lock and creating nothing (`check_writable`): RunRefused for a folder
   holding another run, RunLocked when another process is writing it; a COMPLETE run is yielded at once, unlocked
   (nothing will be written);
2. `before_lock()`, if given: what the writer does only for a run it will write, before it takes the lock (run_job
   loads its model there, so a finished, foreign or busy folder costs no load); its value is OpenRun.prepared;
3. lock: the one-writer lock (records.lock), RunLocked at once when another process holds it;
4. recheck: the state decided once more under the lock (another writer may have finished it meanwhile:
   OpenRun.meanwhile), and what a killed writer left removed. The lock is held until the block ends.
`OpenRun.start(provenance)` records run.json with the identity once the run is under way; `OpenRun.complete(summary)`
writes summary.json, the last step, which makes the run complete.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from mcqa_toolkit.records.identity import RunIdentity, recorded_identity
from mcqa_toolkit.records.lock import RunLocked
from mcqa_toolkit.records.store import RunDir

__all__ = ["RunState", "RunRefused", "run_state", "OpenRun", "check_writable", "open_for_write"]


class RunState(str, Enum):
    NEW = "new"              # no run has started in this folder
    RESUMABLE = "resumable"  # the same run started here and is not finished: finished records are kept
    COMPLETE = "complete"    # the same run finished (the folder's is_complete: RunDir's or AuditDir's)


class RunRefused(ValueError):
    """The folder holds a different run; nothing was written."""


def run_state(run_dir: RunDir, identity: RunIdentity) -> RunState:
    """NEW | RESUMABLE | COMPLETE for a run of `identity` in `run_dir`; RunRefused when the folder holds another
    run (see the module docstring)."""
    recorded = run_dir.run_info()
    if not recorded:
        held = run_dir.held_output()
        if held:
            raise RunRefused(f"{run_dir.dir} holds {held} but no {run_dir.run_info_file.name} saying what produced "
                             "them; use another output folder or delete it")
        return RunState.NEW
    try:
        have = recorded_identity(recorded, run_dir.run_info_file)
    except ValueError as e:
        raise RunRefused(f"{e}; use another output folder or delete it") from None
    diff = have.differences(identity)
    if diff:
        raise RunRefused(f"{run_dir.dir} holds a different run, made with {'; '.join(diff)}; use another output "
                         "folder or delete it")
    return RunState.COMPLETE if run_dir.is_complete() else RunState.RESUMABLE


@dataclass
class OpenRun:
    """A run folder opened for writing (open_for_write; lock held unless COMPLETE): its decided `state`, its
    identity, what the writer prepared before the lock (`prepared`: before_lock's value, None when not called), and
    whether a COMPLETE state was found only under the lock (`meanwhile`: another writer finished it)."""

    run_dir: RunDir
    state: RunState
    identity: RunIdentity
    prepared: Any = None
    meanwhile: bool = False

    def start(self, provenance: dict[str, Any]) -> dict[str, Any]:
        """Record what is being run (run.json): the provenance with the identity and its hash, which it returns
        (what the finished run's provenance.json builds on)."""
        info = {**provenance, "identity": self.identity.to_dict(), "identity_hash": self.identity.hash}
        self.run_dir.write_run_info(info)
        return info

    def complete(self, summary: dict[str, Any]) -> Path:
        """Write summary.json (the headline numbers and this run's identity) after the compacted records: the last
        step of a run, which makes it complete (RunDir.is_complete)."""
        return self.run_dir.write_summary(summary, self.identity)


def check_writable(run_dir: RunDir, identity: RunIdentity) -> RunState:
    """The first decision of open_for_write (see the module docstring): no lock, nothing created."""
    state = run_state(run_dir, identity)
    if state is not RunState.COMPLETE:
        holder = run_dir.holder()
        if holder is not None:
            raise RunLocked(run_dir.dir, holder)
    return state


@contextmanager
def open_for_write(run_dir: RunDir, identity: RunIdentity,
                   before_lock: Callable[[], Any] | None = None) -> Iterator[OpenRun]:
    """Check, `before_lock()`, lock, check again (see the module docstring): an OpenRun whose lock is held until the
    block ends; a COMPLETE run at the first check is yielded without the lock. RunRefused / RunLocked before anything
    is written."""
    if check_writable(run_dir, identity) is RunState.COMPLETE:
        yield OpenRun(run_dir, RunState.COMPLETE, identity)
        return
    prepared = before_lock() if before_lock is not None else None
    with run_dir.lock():
        state = run_state(run_dir, identity)
        if state is not RunState.COMPLETE:
            run_dir.remove_leftovers()
        yield OpenRun(run_dir, state, identity, prepared, meanwhile=state is RunState.COMPLETE)
