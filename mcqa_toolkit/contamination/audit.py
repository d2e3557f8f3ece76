"""The contamination audit of one model on one exam: the measurements every detector needs, in one folder.

    audit = audit_model(backend, items, "audits/gemma__enem2021_pt")
    scores = contamination.contamination_scores(audit.familiarity, audit.probe, audit.records, items,
                                                reference=reference_audit.familiarity)
    contamination.key_pull_test(audit.records)   # did this model see this exam? (contamination.model_tests)

The folder holds a run folder `letters/` (a first-token run with option shuffles: the records key_pull,
fit_residual and the accuracies read), `familiarity.parquet` (contamination.familiarity: Min-K%, Min-K%++, zlib and
the per-byte log-prob the reference ratio compares) and `probe.parquet` (contamination.probe: the masked-option
probe). Each step is skipped when its file is there and the run folder resumes like any run, so a killed audit goes
on where it stopped; `steps` chooses the measurements (the probe, which generates text, is the slowest per item after
the letters). A table written for another model is refused. Everything the audit writes goes through `_table` and
the letters run (run.runner.run), both in `audit_model`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from mcqa_toolkit.backends.base import Backend
from mcqa_toolkit.contamination.familiarity import familiarity_table
from mcqa_toolkit.contamination.probe import probe_table
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.records.files import atomic
from mcqa_toolkit.run.runner import run
from mcqa_toolkit.run.strategy import Strategy

__all__ = ["AUDIT_STRATEGY", "STEPS", "Audit", "audit_model"]

AUDIT_STRATEGY = Strategy(name="audit", method="first_token", style="default", shuffles=5)
STEPS = ("letters", "familiarity", "probe")
FAMILIARITY, PROBE, LETTERS = "familiarity.parquet", "probe.parquet", "letters"


@dataclass(frozen=True)
class Audit:
    """What an audit measured (None: a step not asked for)."""

    folder: Path
    records: pd.DataFrame | None
    familiarity: pd.DataFrame | None
    probe: pd.DataFrame | None


def _table(path: Path, model: str, make: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The table at `path`, or make and write it (atomically); one written for another model is refused."""
    if path.exists():
        table = pd.read_parquet(path)
        if len(table) and set(table["model"]) != {model}:
            raise ValueError(f"{path}: measured for {sorted(set(table['model']))}, not {model!r}; use another folder")
        return table
    table = make()
    atomic(path, lambda tmp: table.to_parquet(tmp, index=False), path.name, "the other steps are intact")
    return table


def audit_model(backend: Backend, items: ItemSet, out_dir: str | Path, strategy: Strategy = AUDIT_STRATEGY,
                steps: Sequence[str] = STEPS, progress: bool = True) -> Audit:
    """Measure `steps` of the audit of `backend` on `items` into `out_dir` (module docstring); resumable."""
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        raise ValueError(f"unknown audit step(s) {unknown}; steps: {STEPS}")
    if "letters" in steps and strategy.shuffles < 2:
        raise ValueError("the letters step needs option shuffles (strategy.shuffles >= 2): key_pull reads the "
                         "probability on the published letter when it shows another option")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    records = run(items, backend, strategy, out / LETTERS, progress=progress) if "letters" in steps else None
    familiarity = probe = None
    if "familiarity" in steps:
        familiarity = _table(out / FAMILIARITY, backend.name,
                             lambda: familiarity_table(backend, items, progress=progress))
    if "probe" in steps:
        probe = _table(out / PROBE, backend.name, lambda: probe_table(backend, items, progress=progress))
    return Audit(out, records, familiarity, probe)
