"""The one place that decides what a run folder holds: nothing yet, a run to resume, a finished run, or
another run that must not be mixed with this one.

`run_state(run_dir, identity)` compares `identity` with what the folder's run.json recorded when its run
started. Two callers, one rule:
  * before anything is loaded (run.recipe.run_job, and `mcqa run` deciding what to skip), the identity is
    the job's parameters, {"job": Job.identity()};
  * once items and model are known (run.runner.run), it is what determines the records: strategy hash,
    dataset fingerprint, model source, judges and how they are combined.
A key the folder recorded with another value refuses the folder (RunRefused, one sentence naming the key);
a key it never recorded refuses it too, except in a folder that holds nothing yet. COMPLETE means every
step of the recipe is done: the records are compacted (provenance complete) and summary.json is written.
"""
from __future__ import annotations

from enum import Enum
from typing import Any, Mapping

from mcqa_toolkit.run.store import RunDir

__all__ = ["RunState", "RunRefused", "run_state", "run_identity"]


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
