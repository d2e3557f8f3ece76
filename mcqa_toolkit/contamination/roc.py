"""How well the contamination detectors find the items a model was trained on, when that is known (models we
contaminated ourselves, contamination.fine_tuning): item-level ROC AUC of exposed vs held-out items, ROC curves, and
the accuracy a model gains on the items it saw.

Labels are a frame with model, parallel_id and exposed (bool), matched on parallel_id so the translation of an
exposed question is labelled exposed (the cross-language audit); any further column of the labels (e.g. `split`,
when one clean model is scored against several splits) becomes a grouping key.
AUC is the Mann-Whitney statistic with ties counted half (= the area under the empirical ROC curve), its
standard error Hanley & McNeil's (1982), the 95% interval AUC +- 1.96 SE clipped to [0, 1].
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from mcqa_toolkit.measure.frames import prepare

__all__ = ["roc_auc", "auc_se", "roc_points", "detector_auc", "roc_curves", "accuracy_by_exposure",
           "accuracy_gain"]


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """P(score of a positive > score of a negative) + P(tie) / 2, NaN scores left out (NaN with no positive or
    no negative)."""
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    s, y = s[~np.isnan(s)], y[~np.isnan(s)]
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 == 0 or n0 == 0:
        return float("nan")
    ranks = stats.rankdata(s)
    return float((ranks[y].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def auc_se(auc: float, n_pos: int, n_neg: int) -> float:
    """Hanley & McNeil (1982): SE^2 = (A(1-A) + (n1-1)(Q1-A^2) + (n0-1)(Q2-A^2)) / (n1 n0), Q1 = A/(2-A),
    Q2 = 2A^2/(1+A)."""
    a = float(auc)
    if np.isnan(a) or n_pos < 1 or n_neg < 1:
        return float("nan")
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    return float(np.sqrt(max(a * (1 - a) + (n_pos - 1) * (q1 - a * a) + (n_neg - 1) * (q2 - a * a), 0.0)
                         / (n_pos * n_neg)))


def roc_points(scores: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    """The empirical ROC curve: one point per distinct score (descending), from (0, 0) to (1, 1).
    Columns: threshold, fpr, tpr."""
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    s, y = s[~np.isnan(s)], y[~np.isnan(s)]
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1] if len(s) else np.array([], dtype=int)
    tp, fp = np.cumsum(y)[last], np.cumsum(~y)[last]
    n1, n0 = max(int(y.sum()), 1), max(int((~y).sum()), 1)
    return pd.DataFrame({"threshold": np.r_[np.inf, s[last]], "fpr": np.r_[0.0, fp / n0], "tpr": np.r_[0.0, tp / n1]})


def _labelled(scores: pd.DataFrame, labels: pd.DataFrame, by: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    prepare(labels, (), ["model", "parallel_id", "exposed"])
    extra = [c for c in labels.columns if c not in ("model", "parallel_id", "exposed")]
    m = scores.merge(labels, on=["model", "parallel_id"])
    if m.empty:
        raise ValueError("no scored item has a label (labels are matched on model and parallel_id)")
    return m, [*by, *[c for c in extra if c not in by]]


def detector_auc(scores: pd.DataFrame, labels: pd.DataFrame,
                 by: Sequence[str] = ("model", "language", "detector")) -> pd.DataFrame:
    """Per group: n_exposed, n_held_out (items with a score), auc, se, lo, hi. `scores`: the long frame of
    contamination.contamination_scores."""
    m, keys = _labelled(scores, labels, by)
    rows = []
    for key, g in m.groupby(keys, sort=True):
        g = g[g["score"].notna()]
        y = g["exposed"].to_numpy(bool)
        auc = roc_auc(g["score"].to_numpy(), y)
        se = auc_se(auc, int(y.sum()), int((~y).sum()))
        rows.append({**dict(zip(keys, key, strict=True)), "n_exposed": int(y.sum()), "n_held_out": int((~y).sum()),
                     "auc": auc, "se": se, "lo": max(0.0, auc - 1.96 * se), "hi": min(1.0, auc + 1.96 * se)})
    return pd.DataFrame(rows)


def roc_curves(scores: pd.DataFrame, labels: pd.DataFrame,
               by: Sequence[str] = ("model", "language", "detector")) -> pd.DataFrame:
    """`roc_points` of every group, with the group's keys (for the figure)."""
    m, keys = _labelled(scores, labels, by)
    parts = [roc_points(g["score"].to_numpy(), g["exposed"].to_numpy(bool)).assign(**dict(zip(keys, key, strict=True)))
             for key, g in m.groupby(keys, sort=True)]
    return pd.concat(parts, ignore_index=True)[[*keys, "threshold", "fpr", "tpr"]]


def accuracy_by_exposure(records: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Per model x language (x label keys) x exposed x order: n_items and accuracy (share of records correct) of
    keyed items, `order` 'original' (the published option order) or 'shuffled' (every other order)."""
    f, _ = prepare(records, (), ["model", "language", "parallel_id", "answer", "permutation", "correct"])
    f = f[f["answer"] >= 0]
    original = f["permutation"].map(lambda p: list(p) == list(range(len(p))))
    f = f.assign(order=np.where(original, "original", "shuffled"), correct=f["correct"].astype(float))
    m, keys = _labelled(f, labels, ("model", "language"))
    g = m.groupby([*keys, "exposed", "order"], sort=True)
    return g.agg(n_items=("parallel_id", "nunique"), accuracy=("correct", "mean")).reset_index()


def accuracy_gain(accuracy: pd.DataFrame, clean: str) -> pd.DataFrame:
    """Each model's accuracy minus the clean model's on the same items (same language, label keys, exposed,
    order): columns of `accuracy_by_exposure` plus clean_accuracy and gain; the clean model's rows left out."""
    keys = [c for c in accuracy.columns if c not in ("model", "n_items", "accuracy")]
    base = accuracy[accuracy["model"] == clean]
    if base.empty:
        raise ValueError(f"no accuracy of the clean model {clean!r}")
    m = accuracy[accuracy["model"] != clean].merge(
        base[keys + ["accuracy"]].rename(columns={"accuracy": "clean_accuracy"}), on=keys)
    return m.assign(gain=m["accuracy"] - m["clean_accuracy"]).reset_index(drop=True)
