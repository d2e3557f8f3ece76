"""The one place that decides what a run folder holds (nothing yet, a run to resume, a finished run, or
another run that must not be mixed with this one), and the one guarded entry for writing it.

`run_state(run_dir, identity)` compares `identity` with what the folder's run.json recorded when its run
started. A key the folder recorded with another value refuses the folder (RunRefused, one sentence naming the
key); a key it never recorded refuses it too, except in a folder that holds nothing yet. COMPLETE means every
step of the recipe is done: the records are compacted (provenance complete) and summary.json is written.

`open_for_write(run_dir, identity)` is how every writer enters a run folder
(run.recipe.run_job, run.runner.run, `mcqa run`'s grid, batch mode, imports): check the state (a different
run is refused before anything is created), take the one-writer lock (records.lock; RunLocked at once when
another process holds it), check again (another writer may have finished it meanwhile), and yield an OpenRun
holding the decided state. The identity is what is known when the folder is opened: a job's parameters
{"job": Job.identity()} before anything is loaded, or, for run() from Python, what determines the records
(strategy hash, dataset fingerprint, model source, judges). `OpenRun.start(provenance)` records run.json once
the model is loaded, comparing only the identity keys the open did not already compare, so every key is
checked once. `check_writable` is the same decision without the lock, for callers that must refuse before loading
a model (run_job: a finished, foreign or busy folder costs no load; a backend that cannot serve the run is
refused before the folder is created).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterator, Mapping

from mcqa_toolkit.records.lock import RunLocked
from mcqa_toolkit.records.store import RunDir

__all__ = ["RunState", "RunRefused", "run_state", "run_identity", "OpenRun", "check_writable", "open_for_write"]


class RunState(str, Enum):
    NEW = "new"              # no run has started in this folder
    RESUMABLE = "resumable"  # the same run started here and is not finished: finished records are kept
    COMPLETE = "complete"    # the same run finished (records, provenance and summary written)


class RunRefused(ValueError):
    """The folder holds a different run; nothing was written."""


def run_identity(provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance keys that determine a run's records (what run() refuses to mix in one folder)."""
    return {"strategy_hash": provenance.get("strategy_hash"),
            "dataset_fingerprint": provenance.get("dataset_fingerprint"),
            "model_source": provenance.get("model", {}).get("source"),
            "judges": provenance.get("judges", []), "judge_combine": provenance.get("judge_combine", "")}


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def run_state(run_dir: RunDir, identity: Mapping[str, Any]) -> RunState:
    """NEW | RESUMABLE | COMPLETE for a run with `identity` in `run_dir`; RunRefused when the folder holds
    another run (see the module docstring)."""
    recorded = run_dir.run_info()
    if not recorded:
        if run_dir.jsonl.exists() and run_dir.read_records():
            raise RunRefused(f"{run_dir.dir} holds records but no {run_dir.run_info_file.name} saying what produced "
                             "them; use another output folder or delete it")
        return RunState.NEW
    have = {**run_identity(recorded), **recorded}
    for key, want in identity.items():
        if key not in have:
            raise RunRefused(f"{run_dir.dir} holds a run that recorded no {key!r} (made another way, e.g. by "
                             "run() from Python or an older version); use another output folder or delete it")
        if have[key] != want:
            old = have[key]
            if isinstance(old, dict) and isinstance(want, dict):  # name the parameters that differ
                diff = sorted(k for k in set(old) | set(want) if old.get(k) != want.get(k))
                what = ", ".join(f"{k} {_describe(old.get(k))} (this run: {_describe(want.get(k))})" for k in diff)
            else:
                what = f"{_describe(old)} (this run: {_describe(want)})"
            raise RunRefused(f"{run_dir.dir} holds a different run, made with {key} {what}; use another output "
                             "folder or delete it")
    if run_dir.is_complete() and run_dir.summary_file.exists():
        return RunState.COMPLETE
    return RunState.RESUMABLE


@dataclass
class OpenRun:
    """A run folder opened for writing (lock held): its decided `state` and the identity it was opened with."""

    run_dir: RunDir
    state: RunState
    identity: dict[str, Any] = field(default_factory=dict)

    def start(self, provenance: dict[str, Any]) -> None:
        """Record what is being run (run.json), after refusing a folder whose run recorded another value of an
        identity key the open did not compare (e.g. the dataset fingerprint once the items are known)."""
        rest = {k: v for k, v in run_identity(provenance).items() if k not in self.identity}
        if rest and self.state is not RunState.NEW:
            run_state(self.run_dir, rest)
        self.run_dir.write_run_info(provenance)


def check_writable(run_dir: RunDir, identity: Mapping[str, Any]) -> RunState:
    """What open_for_write would decide now, without locking or creating anything: the state, RunRefused for a
    folder holding another run, RunLocked when another process is writing it (a COMPLETE run is never locked).
    Callers that load a model first ask this before loading (a finished or busy folder costs no load)."""
    state = run_state(run_dir, identity)
    if state is not RunState.COMPLETE:
        holder = run_dir.holder()
        if holder is not None:
            raise RunLocked(run_dir.dir, holder)
    return state


@contextmanager
def open_for_write(run_dir: RunDir, identity: Mapping[str, Any]) -> Iterator[OpenRun]:
    """The one guarded entry to a run folder (see the module docstring): state, lock, state. A COMPLETE run is
    yielded without taking the lock (nothing will be written); RunRefused / RunLocked before anything is written;
    leftovers of a killed writer are removed once the lock is held."""
    if check_writable(run_dir, identity) is RunState.COMPLETE:
        yield OpenRun(run_dir, RunState.COMPLETE, dict(identity))
        return
    with run_dir.lock():
        state = run_state(run_dir, identity)
        if state is not RunState.COMPLETE:
            run_dir.remove_leftovers()
        yield OpenRun(run_dir, state, dict(identity))
