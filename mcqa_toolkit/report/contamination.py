"""The contamination validation's report (notebooks/19_contamination): its raw results read back, the AUC table
by detector and number of exposures, the model-level tests' flags and false alarms, the accuracy gains.

The raw results (written by scripts/contamination_validation.py through contamination.validation_results,
committed under data/contamination) are scores.parquet (contamination.contamination_scores per model x exam),
labels.parquet (model, parallel_id, exposed, split), accuracy.parquet (contamination.accuracy_by_exposure),
tests.parquet (the model-level tests), probe.parquet (the masked-
option probe's exact matches) and models.json (each contaminated model's manifest without its item lists). Models
are "clean" (the base model) and "s<seed>-x<exposures>".
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from mcqa_toolkit.contamination.detectors import DETECTOR_NAMES
from mcqa_toolkit.report.tables import Table

__all__ = ["Validation", "load_validation", "model_table", "with_models", "auc_summary", "auc_table",
           "flag_tests", "flag_summary", "gain_summary", "probe_rates", "DETECTOR_NAMES"]

FILES = ("scores", "labels", "accuracy", "tests", "probe")


@dataclass(frozen=True)
class Validation:
    """The raw results of a validation (module docstring), as frames; `models`: model -> manifest summary."""

    scores: pd.DataFrame
    labels: pd.DataFrame
    accuracy: pd.DataFrame
    tests: pd.DataFrame
    probe: pd.DataFrame
    models: dict


def load_validation(folder: str | Path) -> Validation:
    """Read the raw results in `folder` (FileNotFoundError naming the first file missing)."""
    folder = Path(folder)
    for name in [*(f"{f}.parquet" for f in FILES), "models.json"]:
        if not (folder / name).exists():
            raise FileNotFoundError(f"{folder / name}: not found; scripts/contamination_validation.py --collect "
                                    "writes the raw results")
    frames = {f: pd.read_parquet(folder / f"{f}.parquet") for f in FILES}
    return Validation(**frames, models=json.loads((folder / "models.json").read_text(encoding="utf-8")))


def model_table(models: dict) -> pd.DataFrame:
    """One row per model: model, seed, exposures (the clean model: exposures 0, seed NaN), final train loss."""
    rows = [{"model": "clean", "seed": np.nan, "exposures": 0, "train_loss": np.nan}]
    rows += [{"model": m, "seed": info["recipe"]["seed"], "exposures": info["exposures"],
              "train_loss": info["train_loss"][-1]} for m, info in models.items()]
    return pd.DataFrame(rows)


def with_models(frame: pd.DataFrame, models: dict) -> pd.DataFrame:
    """`frame` with each model's seed and exposures."""
    return frame.merge(model_table(models)[["model", "seed", "exposures"]], on="model", how="left")


def auc_summary(aucs: pd.DataFrame, models: dict) -> pd.DataFrame:
    """Per exam x language x detector x exposures (0 = the clean model, against every split): the mean, min and
    max AUC over the models (seeds). `aucs`: contamination.detector_auc by model, exam, language, detector."""
    a = with_models(aucs, models)
    g = a.groupby(["exam", "language", "detector", "exposures"], sort=True)["auc"]
    return g.agg(auc="mean", auc_min="min", auc_max="max", n_models="count").reset_index()


def auc_table(summary: pd.DataFrame, exam: str, caption: str = "", label: str = "") -> Table:
    """Detectors (rows, in DETECTOR_NAMES order) x exposures (columns): mean AUC over the seeds."""
    s = summary[summary["exam"] == exam]
    wide = s.pivot(index="detector", columns="exposures", values="auc")
    wide = wide.reindex([d for d in DETECTOR_NAMES if d in wide.index])
    wide.index = [DETECTOR_NAMES[d] for d in wide.index]
    wide.index.name = "detector"
    wide.columns = ["clean" if e == 0 else f"{e} exposure{'s' if e > 1 else ''}" for e in wide.columns]
    best = {c: None if c == "clean" else "max" for c in wide.columns}   # the clean column is a baseline
    return Table(wide, best=best, digits=2, caption=caption, label=label)


def flag_tests(tests: pd.DataFrame, models: dict, alpha: float, exposure_exam: str = "pt2021") -> pd.DataFrame:
    """Every model-level test with `flagged` (p < alpha) and `exam_status`: "saw" (a contaminated model on
    `exposure_exam`), "translation" (on the same exam in another language: the cross-language case, apart) or
    "unseen" (the clean model everywhere, contaminated models on other exams: a flag is a false alarm). Exams are
    named <language><year> (pt2021, en2021)."""
    t = with_models(tests, models)
    contaminated = t["exposures"] > 0
    status = pd.Series("unseen", index=t.index)
    status[contaminated & (t["exam"].str[2:] == exposure_exam[2:])] = "translation"
    status[contaminated & (t["exam"] == exposure_exam)] = "saw"
    return t.assign(flagged=t["p_value"].lt(alpha) & t["p_value"].notna(), exam_status=status)


def flag_summary(flags: pd.DataFrame) -> pd.DataFrame:
    """Per test: detections (flags among models that saw the exam, by exposures) and false alarms (flags among
    model x exam pairs that did not see it; exposures -1). Columns: test, kind, exposures, n, flagged, rate."""
    tested = flags[flags["p_value"].notna()]
    hits, misses = tested[tested["exam_status"] == "saw"], tested[tested["exam_status"] == "unseen"]
    det = hits.groupby(["test", "exposures"])["flagged"].agg(n="count", flagged="sum").reset_index()
    fa = misses.groupby("test")["flagged"].agg(n="count", flagged="sum").reset_index().assign(exposures=-1)
    out = pd.concat([det.assign(kind="detection"), fa.assign(kind="false alarm")], ignore_index=True)
    return out.assign(rate=out["flagged"] / out["n"])[["test", "kind", "exposures", "n", "flagged", "rate"]]


def gain_summary(gains: pd.DataFrame, models: dict) -> pd.DataFrame:
    """Mean accuracy gain over the clean model per exam x language x exposures x exposed x order (mean over
    seeds). `gains`: contamination.accuracy_gain."""
    g = with_models(gains, models).groupby(["exam", "language", "exposures", "exposed", "order"], sort=True)
    return g.agg(accuracy=("accuracy", "mean"), clean_accuracy=("clean_accuracy", "mean"),
                 gain=("gain", "mean")).reset_index()


def probe_rates(probe: pd.DataFrame, labels: pd.DataFrame, models: dict) -> pd.DataFrame:
    """The masked-option probe's exact-match rate per exam x exposures x exposed (every model's labels; the
    clean model once per split)."""
    m = with_models(probe.merge(labels, on=["model", "parallel_id"]), models)
    g = m.groupby(["exam", "exposures", "exposed"], sort=True)
    return g.agg(n=("exact", "count"), exact_rate=("exact", "mean"), rouge_l=("rouge_l", "mean")).reset_index()
