"""The contamination audit of one model on one exam: the measurements every detector needs, in one folder.

    audit = audit_model(backend, items, "audits/gemma__enem2021_pt")
    scores = contamination.contamination_scores(audit.familiarity, audit.probe, audit.records, items,
                                                reference=reference_audit.familiarity)
    contamination.key_pull_test(audit.records)   # did this model see this exam? (contamination.model_tests)

The folder (records.audit_dir.AuditDir) holds a run folder `letters/` (a first-token run with option shuffles: the
records key_pull, fit_residual and the accuracies read), `familiarity.parquet` (contamination.familiarity: Min-K%,
Min-K%++, zlib and the per-byte log-prob the reference ratio compares) and `probe.parquet` (contamination.probe: the
masked-option probe). `steps` chooses the measurements (the probe, which generates text, is the slowest per item
after the letters). The folder is written as every run folder is: opened through records.state.open_for_write with
the audit's identity (`audit_identity`: the model, the items' fingerprint, the strategy's hash), so one writer at a
time, an audit of another model or other items refused, and a killed audit resumes where it stopped: a step done
(AuditDir.done) is read back, the letters run resumes like any run.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mcqa_toolkit.backends.base import Backend
from mcqa_toolkit.contamination.familiarity import familiarity_table
from mcqa_toolkit.contamination.probe import probe_table
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.records.audit_dir import STEPS, AuditDir
from mcqa_toolkit.records.identity import RunIdentity
from mcqa_toolkit.records.state import RunState, open_for_write
from mcqa_toolkit.run.runner import backend_model, provenance, run
from mcqa_toolkit.run.strategy import Strategy

__all__ = ["AUDIT_STRATEGY", "STEPS", "Audit", "audit_identity", "audit_model", "load_audit"]

AUDIT_STRATEGY = Strategy(name="audit", method="first_token", style="default", shuffles=5)
_LOG = logging.getLogger("mcqa_toolkit.contamination")


@dataclass(frozen=True)
class Audit:
    """What an audit measured (None: a step not asked for, or not done)."""

    folder: Path
    records: pd.DataFrame | None
    familiarity: pd.DataFrame | None
    probe: pd.DataFrame | None


def audit_identity(backend: Backend, items: ItemSet, strategy: Strategy) -> RunIdentity:
    """What determines an audit's measurements, as a run's identity: the model as runs name it
    (run.runner.backend_model), the items' fingerprint, the strategy's hash (no dataset name: items given by hand,
    as to run())."""
    return RunIdentity(backend_model(backend), "", items.fingerprint(), strategy.hash)


def audit_model(backend: Backend, items: ItemSet, out_dir: str | Path, strategy: Strategy = AUDIT_STRATEGY,
                steps: Sequence[str] = STEPS, progress: bool = True) -> Audit:
    """Measure `steps` of the audit of `backend` on `items` into `out_dir` (module docstring); resumable. RunRefused
    for a folder audited with another model, items or strategy; RunLocked while another process writes it."""
    folder = AuditDir(out_dir, steps)   # an unknown step: ValueError
    if "letters" in steps and strategy.shuffles < 2:
        raise ValueError("the letters step needs option shuffles (strategy.shuffles >= 2): key_pull reads the "
                         "probability on the published letter when it shows another option")
    with open_for_write(folder, audit_identity(backend, items, strategy)) as opened:
        if opened.state is not RunState.COMPLETE:
            opened.start(provenance(backend, strategy, items, "", ()))
            measures = {"letters": lambda: run(items, backend, strategy, folder.letters.dir, progress=progress),
                        "familiarity": lambda: folder.write_table("familiarity", familiarity_table(
                            backend, items, progress=progress)),
                        "probe": lambda: folder.write_table("probe", probe_table(backend, items, progress=progress))}
            for step in STEPS:   # in this order; a step done (AuditDir.done) is not measured again
                if step in folder.steps and not folder.done(step):
                    measures[step]()
    return load_audit(folder.dir, steps)


def load_audit(out_dir: str | Path, steps: Sequence[str] = STEPS) -> Audit:
    """What the audit folder holds of `steps`, as read back (None: a step not done: AuditDir.done). A folder without
    run.json (written before audit folders recorded their identity) is read as it is, with a note: what it was
    measured on is not recorded."""
    folder = AuditDir(out_dir, steps)
    if not folder.run_info_file.exists() and folder.held_output():
        _LOG.warning("%s: an audit folder without %s: the model and items it measured are not recorded, so they are "
                     "not checked", folder.dir, folder.run_info_file.name)
    wanted = [s for s in folder.steps if folder.done(s)]
    return Audit(folder.dir, folder.letters.load() if "letters" in wanted else None,
                 folder.read_table("familiarity") if "familiarity" in wanted else None,
                 folder.read_table("probe") if "probe" in wanted else None)
