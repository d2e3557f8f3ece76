"""The contamination validation's report (notebooks/contamination_validation): its raw results read back, the AUC table
by detector and number of exposures, the model-level tests' flags and false alarms, the accuracy gains.

The raw results (written by studies/contamination_validation.py through contamination.validation_results,
committed under results/studies/contamination) are scores.parquet (contamination.contamination_scores per model x exam),
labels.parquet (model, parallel_id, exposed, split), accuracy.parquet (contamination.accuracy_by_exposure),
tests.parquet (the model-level tests), probe.parquet (the masked-option probe's exact matches) and models.json
(each fine-tuned model's manifest without its item lists). Models are of three kinds: "clean" (the base model),
contaminated ("s<seed>-x<exposures>": fine-tuned on pages of the exposure exam) and controls ("c<seed>-x<exposures>",
`"kind": "control"` in models.json: fine-tuned the same way on pages of other exams, so clean of every audited one).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mcqa_toolkit.contamination.detectors import DETECTOR_NAMES
from mcqa_toolkit.report.tables import Table

__all__ = ["KINDS", "Validation", "load_validation", "model_table", "with_models", "models_audited", "column_name",
           "auc_summary", "auc_table", "flag_tests", "flag_summary", "rate_upper_bound", "gain_summary",
           "probe_rates", "DETECTOR_NAMES"]

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
            raise FileNotFoundError(f"{folder / name}: not found; studies/contamination_validation.py --collect "
                                    "writes the raw results")
    frames = {f: pd.read_parquet(folder / f"{f}.parquet") for f in FILES}
    return Validation(**frames, models=json.loads((folder / "models.json").read_text(encoding="utf-8")))


KINDS = ("clean", "contaminated", "control")


def model_table(models: dict) -> pd.DataFrame:
    """One row per model: model, kind (KINDS), seed, exposures (the clean model: exposures 0, seed NaN), final
    train loss."""
    rows = [{"model": "clean", "kind": "clean", "seed": np.nan, "exposures": 0, "train_loss": np.nan}]
    rows += [{"model": m, "kind": info.get("kind", "contaminated"), "seed": info["recipe"]["seed"],
              "exposures": info["exposures"], "train_loss": info["train_loss"][-1]} for m, info in models.items()]
    return pd.DataFrame(rows)


def with_models(frame: pd.DataFrame, models: dict) -> pd.DataFrame:
    """`frame` with each model's kind, seed and exposures."""
    return frame.merge(model_table(models)[["model", "kind", "seed", "exposures"]], on="model", how="left")


def models_audited(scores: pd.DataFrame, models: dict, exam: str) -> dict[str, int]:
    """How many models have scores on `exam`, per kind and exposures: {"control / 3": 2, ...}, the number of models
    behind each figure of the validation (a count of false alarms among two controls is not a rate)."""
    m = with_models(scores.loc[scores["exam"] == exam, ["model"]].drop_duplicates(), models)
    return {f"{k} / {int(e)}": int(n) for (k, e), n in m.groupby(["kind", "exposures"], sort=True).size().items()}


def column_name(kind: str, exposures: int) -> str:
    """A table column of a kind of model: "clean", "3 exposures" (contaminated), "controls (3 exposures)"."""
    n = f"{exposures} exposure{'s' if exposures > 1 else ''}"
    return {"clean": "clean", "control": f"controls ({n})"}.get(kind, n)


def auc_summary(aucs: pd.DataFrame, models: dict) -> pd.DataFrame:
    """Per exam x language x detector x kind x exposures (the clean model and the controls against every split):
    the mean, min and max AUC over the models (seeds) and their number. `aucs`: contamination.detector_auc by model,
    exam, language, detector."""
    a = with_models(aucs, models)
    g = a.groupby(["exam", "language", "detector", "kind", "exposures"], sort=True)["auc"]
    return g.agg(auc="mean", auc_min="min", auc_max="max", n_models="count").reset_index()


def auc_table(summary: pd.DataFrame, exam: str, caption: str = "", label: str = "") -> Table:
    """Detectors (rows, in DETECTOR_NAMES order) x kinds of model (columns: clean, each number of exposures, the
    controls): mean AUC over the seeds (and splits)."""
    s = summary[summary["exam"] == exam].assign(order=lambda d: d["kind"].map(KINDS.index) * 1000 + d["exposures"])
    s = s.sort_values("order").assign(column=lambda d: [column_name(k, int(e))
                                                        for k, e in zip(d["kind"], d["exposures"], strict=True)])
    wide = s.pivot(index="detector", columns="column", values="auc")[list(dict.fromkeys(s["column"]))]
    wide = wide.reindex([d for d in DETECTOR_NAMES if d in wide.index])
    wide.index = [DETECTOR_NAMES[d] for d in wide.index]
    wide.index.name = "detector"
    wide.columns.name = None
    best = {c: "max" if c[0].isdigit() else None for c in wide.columns}   # clean and controls are baselines
    return Table(wide, best=best, digits=2, caption=caption, label=label)


def flag_tests(tests: pd.DataFrame, models: dict, alpha: float, exposure_exam: str = "pt2021") -> pd.DataFrame:
    """Every model-level test with `flagged` (p < alpha) and `exam_status`: "saw" (a contaminated model on
    `exposure_exam`), "translation" (on the same exam in another language: the cross-language case, apart) or
    "unseen" (the clean model and the controls everywhere, contaminated models on other exams: a flag is a false
    alarm), and `clean_model` (the clean model or a control on `exposure_exam`: the pairs an auditor's false alarm
    is counted on). Exams are named <language><year> (pt2021, en2021)."""
    t = with_models(tests, models)
    contaminated = t["kind"] == "contaminated"
    status = pd.Series("unseen", index=t.index)
    status[contaminated & (t["exam"].str[2:] == exposure_exam[2:])] = "translation"
    status[contaminated & (t["exam"] == exposure_exam)] = "saw"
    return t.assign(flagged=t["p_value"].lt(alpha) & t["p_value"].notna(), exam_status=status,
                    clean_model=~contaminated & (t["exam"] == exposure_exam))


def rate_upper_bound(flagged: int, n: int, confidence: float = 0.95) -> float:
    """The exact (Clopper-Pearson) one-sided upper confidence bound of a rate seen as `flagged` of `n`: what a count
    of false alarms among a few clean models allows the true rate to be (0 of 6 still allows 0.39 at 95%)."""
    from scipy.stats import binomtest

    return float(binomtest(flagged, n, alternative="less").proportion_ci(confidence, method="exact").high)


def flag_summary(flags: pd.DataFrame) -> pd.DataFrame:
    """Per test: detections (flags among models that saw the exam, by exposures), false alarms among the clean
    models (the clean model and the controls on the exposure exam: kind "clean models", with n_controls of them
    controls) and among every model x exam pair that saw nothing ("false alarm"); exposures -1 for both.
    Columns: test, kind, exposures, n, n_controls, flagged, rate, rate_upper (rate_upper_bound at 95%)."""
    tested = flags[flags["p_value"].notna()]
    hits, misses = tested[tested["exam_status"] == "saw"], tested[tested["exam_status"] == "unseen"]
    clean = tested[tested["clean_model"]]
    det = hits.groupby(["test", "exposures"])["flagged"].agg(n="count", flagged="sum").reset_index()
    cm = clean.groupby("test").agg(n=("flagged", "count"), flagged=("flagged", "sum"),
                                   n_controls=("kind", lambda k: int((k == "control").sum()))).reset_index()
    fa = misses.groupby("test")["flagged"].agg(n="count", flagged="sum").reset_index()
    out = pd.concat([det.assign(kind="detection", n_controls=0), cm.assign(kind="clean models", exposures=-1),
                     fa.assign(kind="false alarm", exposures=-1, n_controls=0)], ignore_index=True)
    out = out.astype({"n": int, "flagged": int, "n_controls": int, "exposures": int})
    out = out.assign(rate=out["flagged"] / out["n"],
                     rate_upper=[rate_upper_bound(k, n) for k, n in zip(out["flagged"], out["n"], strict=True)])
    return out[["test", "kind", "exposures", "n", "n_controls", "flagged", "rate", "rate_upper"]]


def gain_summary(gains: pd.DataFrame, models: dict) -> pd.DataFrame:
    """Mean accuracy gain over the clean model per exam x language x kind x exposures x exposed x order (mean over
    seeds, and n_models). `gains`: contamination.accuracy_gain."""
    g = with_models(gains, models).groupby(["exam", "language", "kind", "exposures", "exposed", "order"], sort=True)
    return g.agg(accuracy=("accuracy", "mean"), clean_accuracy=("clean_accuracy", "mean"),
                 gain=("gain", "mean"), n_models=("model", "nunique")).reset_index()


def probe_rates(probe: pd.DataFrame, labels: pd.DataFrame, models: dict) -> pd.DataFrame:
    """The masked-option probe's exact-match rate per exam x kind x exposures x exposed (every model's labels; the
    clean model and the controls once per split)."""
    m = with_models(probe.merge(labels, on=["model", "parallel_id"]), models)
    g = m.groupby(["exam", "kind", "exposures", "exposed"], sort=True)
    return g.agg(n=("exact", "count"), exact_rate=("exact", "mean"), rouge_l=("rouge_l", "mean")).reset_index()
