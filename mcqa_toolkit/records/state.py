"""The one place that decides what a run folder holds (nothing yet, a run to resume, a finished run, or another
run that must not be mixed with this one), and the guarded entry for writing it.

`run_state(run_dir, identity)` compares a records.identity.RunIdentity with the one the folder's run.json recorded
when its run started (records.identity.recorded_identity reads folders written before RunIdentity too): a field
that differs refuses the folder (RunRefused, one sentence naming the fields). COMPLETE means every step of the run
is done: the records are compacted (provenance complete) and summary.json is written.

The process that writes a run folder decides its state twice, and no other process decides it for it:
- `check_writable(run_dir, identity)`: once, without the lock or creating anything: the state, RunRefused for a
  folder holding another run, RunLocked when another process is writing it (a COMPLETE run is never locked).
  Writers that load a model first ask this before loading (a finished, foreign or busy folder costs no load);
- `locked(run_dir, identity)`: once more, under the one-writer lock (records.lock; another writer may have finished
  it meanwhile), removing what a killed writer left; it yields an OpenRun holding the decided state, and the lock
  is held until the block ends.
`open_for_write(run_dir, identity)` is both in a row, for writers with nothing to load in between (imports, `mcqa
run`'s kernel opening a run before its notebook: run.kernel). `OpenRun.start(provenance)` records run.json with
the identity once the run is under way.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterator

from mcqa_toolkit.records.identity import RunIdentity, recorded_identity
from mcqa_toolkit.records.lock import RunLocked
from mcqa_toolkit.records.store import RunDir

__all__ = ["RunState", "RunRefused", "run_state", "OpenRun", "check_writable", "locked", "open_for_write"]


class RunState(str, Enum):
    NEW = "new"              # no run has started in this folder
    RESUMABLE = "resumable"  # the same run started here and is not finished: finished records are kept
    COMPLETE = "complete"    # the same run finished (records, provenance and summary written)


class RunRefused(ValueError):
    """The folder holds a different run; nothing was written."""


def run_state(run_dir: RunDir, identity: RunIdentity) -> RunState:
    """NEW | RESUMABLE | COMPLETE for a run of `identity` in `run_dir`; RunRefused when the folder holds another
    run (see the module docstring)."""
    recorded = run_dir.run_info()
    if not recorded:
        if run_dir.jsonl.exists() and run_dir.read_records():
            raise RunRefused(f"{run_dir.dir} holds records but no {run_dir.run_info_file.name} saying what produced "
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
    if run_dir.is_complete() and run_dir.summary_file.exists():
        return RunState.COMPLETE
    return RunState.RESUMABLE


@dataclass
class OpenRun:
    """A run folder opened for writing (lock held unless COMPLETE): its decided `state` and its identity."""

    run_dir: RunDir
    state: RunState
    identity: RunIdentity

    def start(self, provenance: dict[str, Any]) -> dict[str, Any]:
        """Record what is being run (run.json): the provenance with the identity and its hash, which it returns
        (what the finished run's provenance.json builds on)."""
        info = {**provenance, "identity": self.identity.to_dict(), "identity_hash": self.identity.hash}
        self.run_dir.write_run_info(info)
        return info


def check_writable(run_dir: RunDir, identity: RunIdentity) -> RunState:
    """The first decision (see the module docstring): no lock, nothing created."""
    state = run_state(run_dir, identity)
    if state is not RunState.COMPLETE:
        holder = run_dir.holder()
        if holder is not None:
            raise RunLocked(run_dir.dir, holder)
    return state


@contextmanager
def locked(run_dir: RunDir, identity: RunIdentity) -> Iterator[OpenRun]:
    """The second decision, under the lock (see the module docstring); RunLocked at once when another process
    holds it. Leftovers of a killed writer are removed once the lock is held (not in a COMPLETE folder)."""
    with run_dir.lock():
        state = run_state(run_dir, identity)
        if state is not RunState.COMPLETE:
            run_dir.remove_leftovers()
        yield OpenRun(run_dir, state, identity)


@contextmanager
def open_for_write(run_dir: RunDir, identity: RunIdentity) -> Iterator[OpenRun]:
    """check_writable, then locked: a COMPLETE run is yielded without taking the lock (nothing will be written);
    RunRefused / RunLocked before anything is written."""
    if check_writable(run_dir, identity) is RunState.COMPLETE:
        yield OpenRun(run_dir, RunState.COMPLETE, identity)
        return
    with locked(run_dir, identity) as folder:
        yield folder
