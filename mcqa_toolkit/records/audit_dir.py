"""AuditDir: the folder of a contamination audit (contamination.audit.audit_model), a run folder of its own kind.

An audit folder (`audits/<model>__<exam>/`) holds
  run.json             what is audited (records.identity.RunIdentity: the model, the items' fingerprint, the
                       strategy's hash) and its provenance, written when the audit starts; resume checks it
  run.lock             the one-writer lock (records.lock)
  letters/             a run folder (RunDir): a first-token run with option shuffles
  familiarity.parquet  contamination.familiarity's table
  probe.parquet        contamination.probe's table
It is written as every run folder is: opened through records.state.open_for_write (check, lock, check again), so
two writers of one folder cannot both write, and an audit of another model or of other items is refused naming the
fields that differ. A step is done when its output is there whole: the letters run complete (RunDir.is_complete),
a table written (atomically: a table that is there is whole). A folder holding audit output but no run.json (one
written before audit folders recorded their identity) is refused for writing: what its tables were measured on
cannot be checked; it can still be read (contamination.audit.load_audit).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from mcqa_toolkit.records.files import atomic
from mcqa_toolkit.records.store import RunDir

__all__ = ["AuditDir", "STEPS", "LETTERS", "FAMILIARITY", "PROBE"]

STEPS = ("letters", "familiarity", "probe")
LETTERS, FAMILIARITY, PROBE = "letters", "familiarity.parquet", "probe.parquet"
_TABLES = {"familiarity": FAMILIARITY, "probe": PROBE}


class AuditDir(RunDir):
    """The files of one audit folder; `steps`: the steps asked of it (what `is_complete` requires). Its run.json,
    lock and leftovers are a run folder's (RunDir); its output is the letters run and the tables."""

    def __init__(self, path: str | Path, steps: Sequence[str] = STEPS):
        unknown = [s for s in steps if s not in STEPS]
        if unknown:
            raise ValueError(f"unknown audit step(s) {unknown}; steps: {STEPS}")
        super().__init__(path)
        self.steps = tuple(steps)
        self.letters = RunDir(self.dir / LETTERS)

    def __repr__(self) -> str:
        return f"AuditDir({str(self.dir)!r}, steps={self.steps})"

    def table_file(self, step: str) -> Path:
        """The file of a table step (familiarity, probe)."""
        return self.dir / _TABLES[step]

    def done(self, step: str) -> bool:
        """The step's output is there whole: the letters run complete, or the table written."""
        return self.letters.is_complete() if step == "letters" else self.table_file(step).exists()

    def is_complete(self) -> bool:
        """Every step of `steps` is done: the one definition of a complete audit (records.state reads it as it reads
        RunDir.is_complete for a run; contamination.audit and its readers ask it)."""
        return all(self.done(s) for s in self.steps)

    def held_output(self) -> str:
        """The audit output the folder holds, named ('' for none): refused without a run.json (records.state)."""
        names = [f"{LETTERS}/"] if self.letters.dir.exists() else []
        names += [name for name in _TABLES.values() if (self.dir / name).exists()]
        return f"the audit output {', '.join(names)}" if names else ""

    def read_table(self, step: str) -> pd.DataFrame | None:
        """The table of a table step, None when it is not written."""
        path = self.table_file(step)
        return pd.read_parquet(path) if path.exists() else None

    def write_table(self, step: str, table: pd.DataFrame) -> Path:
        """Write a table step's table atomically (records.files.atomic); call with the folder open for writing."""
        path = self.table_file(step)
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic(path, lambda tmp: table.to_parquet(tmp, index=False), path.name, "the other steps are intact")
        return path
