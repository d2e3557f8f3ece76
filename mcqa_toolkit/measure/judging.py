"""LLM judges measured like raters: their verdicts as a tidy frame, agreement between judges (quadratic-weighted
kappa, ICC, mean absolute difference) and with human graders, and human grades that override the judges.

Agreement statistics:
- quadratic-weighted kappa (Cohen 1968) on integer ratings (scores rounded to whole points, halves up):
  kappa_w = 1 - sum(W * O) / sum(W * E), W_ij = (i - j)^2 / (K - 1)^2 over the categories min..max of both
  raters, O the observed joint counts, E the outer product of the marginal counts / n (same as sklearn's
  cohen_kappa_score(weights="quadratic") with labels=min..max).
- ICC(2,1) (Shrout & Fleiss 1979: two-way random effects, absolute agreement, single rater) on scores as a
  fraction of the points available (items differ in points): (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from mcqa_toolkit.measure.frames import finish, prepare

__all__ = ["quadratic_weighted_kappa", "icc", "judgements_frame", "judge_agreement", "apply_human_grades",
           "compare_with_human", "HUMAN"]

HUMAN = "human"
_KEYS = ("run_id", "model", "strategy", "item_id", "shuffle")


def quadratic_weighted_kappa(a: Sequence[float], b: Sequence[float]) -> float:
    """Quadratic-weighted kappa of two raters' ratings (rounded to integers, halves up); NaN when both raters
    use one and the same category only (no variation to agree on)."""
    x = np.floor(np.asarray(a, dtype=float) + 0.5).astype(int)
    y = np.floor(np.asarray(b, dtype=float) + 0.5).astype(int)
    if x.shape != y.shape or x.ndim != 1 or not len(x):
        raise ValueError("quadratic_weighted_kappa needs two equally long, non-empty 1-d rating arrays")
    lo, hi = min(x.min(), y.min()), max(x.max(), y.max())
    k = hi - lo + 1
    if k == 1:
        return float("nan")
    observed = np.zeros((k, k))
    np.add.at(observed, (x - lo, y - lo), 1)
    expected = np.outer(observed.sum(1), observed.sum(0)) / len(x)
    i = np.arange(k)
    w = (i[:, None] - i[None, :]) ** 2 / (k - 1) ** 2
    denominator = (w * expected).sum()
    return float(1 - (w * observed).sum() / denominator) if denominator > 0 else float("nan")


def icc(ratings: np.ndarray) -> float:
    """ICC(2,1) of an (n targets, k raters) matrix without missing values (Shrout & Fleiss 1979)."""
    r = np.asarray(ratings, dtype=float)
    if r.ndim != 2 or r.shape[0] < 2 or r.shape[1] < 2 or np.isnan(r).any():
        raise ValueError("icc needs an (n >= 2 targets, k >= 2 raters) matrix without NaN")
    n, k = r.shape
    grand = r.mean()
    msr = k * ((r.mean(1) - grand) ** 2).sum() / (n - 1)
    msc = n * ((r.mean(0) - grand) ** 2).sum() / (k - 1)
    mse = ((r - r.mean(1, keepdims=True) - r.mean(0, keepdims=True) + grand) ** 2).sum() / ((n - 1) * (k - 1))
    denominator = msr + (k - 1) * mse + k * (msc - mse) / n
    return float((msr - mse) / denominator) if denominator > 0 else float("nan")


def judgements_frame(records: pd.DataFrame) -> pd.DataFrame:
    """One row per judged record x judge: the record keys, judge, score (NaN when the verdict was an error),
    status (ok | error), reason, raw_output, points_possible."""
    prepare(records, (), (*_KEYS, "judgements", "points_possible"))
    rows = []
    for rec in records[records["judgements"].astype(str) != ""].itertuples(index=False):
        for v in json.loads(rec.judgements):
            rows.append({**{k: getattr(rec, k) for k in _KEYS}, "judge": v["judge"],
                         "score": np.nan if v.get("score") is None else float(v["score"]), "status": v["status"],
                         "reason": v.get("reason", ""), "raw_output": v.get("raw_output", ""),
                         "points_possible": float(rec.points_possible)})
    return pd.DataFrame(rows, columns=[*_KEYS, "judge", "score", "status", "reason", "raw_output", "points_possible"])


def _wide(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Records x raters of scores (NaN = no readable score), plus points_possible."""
    wide = verdicts.pivot_table(index=list(_KEYS), columns="judge", values="score", aggfunc="first", dropna=False)
    points = verdicts.groupby(list(_KEYS))["points_possible"].first()
    return wide.join(points)


def _pair_rows(wide: pd.DataFrame, raters: Sequence[str], pairs: Sequence[tuple[str, str]]) -> pd.DataFrame:
    rows = []
    for a, b in pairs:
        both = wide[[a, b, "points_possible"]].dropna()
        rows.append({"rater_a": a, "rater_b": b, "n": len(both),
                     "n_unreadable": int(wide[[a, b]].isna().any(axis=1).sum()),
                     "qwk": quadratic_weighted_kappa(both[a], both[b]) if len(both) else np.nan,
                     "icc": icc(both[[a, b]].to_numpy() / both[["points_possible"]].to_numpy())
                     if len(both) >= 2 else np.nan,
                     "mean_abs_diff": float((both[a] - both[b]).abs().mean()) if len(both) else np.nan})
    return pd.DataFrame(rows, columns=["rater_a", "rater_b", "n", "n_unreadable", "qwk", "icc", "mean_abs_diff"])


def judge_agreement(records: pd.DataFrame) -> pd.DataFrame:
    """Agreement of every pair of judges over the records both could score: n, n_unreadable (records where
    either verdict was an error), qwk (whole points), icc (ICC(2,1) on score / points), mean_abs_diff (points).
    Empty when the records were judged by fewer than two judges."""
    verdicts = judgements_frame(records)
    raters = sorted(verdicts["judge"].unique())
    return _pair_rows(_wide(verdicts), raters, list(combinations(raters, 2))) if len(raters) > 1 else \
        _pair_rows(pd.DataFrame(columns=["points_possible"]), [], [])


def _match(records: pd.DataFrame, grades: pd.DataFrame) -> pd.DataFrame:
    """`grades` (item_id, points, and any of run_id/model/strategy/shuffle) joined to the record each names."""
    prepare(grades, (), ("item_id", "points"))
    on = [k for k in _KEYS if k in grades.columns]
    merged = records.reset_index().merge(grades[[*on, "points"]], on=on, how="right", indicator=True)
    lost = merged[merged["_merge"] != "both"]
    if len(lost):
        raise ValueError(f"{len(lost)} human grade(s) match no record (e.g. {lost[on].iloc[0].to_dict()})")
    if merged["index"].duplicated().any():
        raise ValueError(f"several human grades for one record: give the grades the key column(s) that tell the "
                         f"records apart (any of {list(_KEYS)})")
    judged = merged["judgements"].astype(str) != ""
    if not judged.all():
        raise ValueError(f"human grades are for judged (short-answer) records; item(s) "
                         f"{sorted(set(merged.loc[~judged, 'item_id']))[:3]} were graded by rule")
    pts = pd.to_numeric(merged["points"], errors="coerce")
    bad = pts.isna() | (pts < 0) | (pts > merged["points_possible"])
    if bad.any():
        raise ValueError(f"human grade {merged.loc[bad, 'points'].iloc[0]!r} for item "
                         f"{merged.loc[bad, 'item_id'].iloc[0]} is not a number in [0, points]")
    return merged.assign(points=pts)


def apply_human_grades(records: pd.DataFrame, grades: pd.DataFrame) -> pd.DataFrame:
    """The records with human grades replacing the judges' points (and status: correct at full points, partial
    above 0, incorrect at 0) for the judged records the grades name; column `graded_by` says judge | human
    (rule for records graded by rule)."""
    prepare(records, (), (*_KEYS, "judgements", "points_earned", "points_possible", "status", "correct"))
    m = _match(records, grades)
    out = records.copy()
    out["graded_by"] = np.where(out["judgements"].astype(str) != "", "judge", "rule")
    idx, pts = m["index"].to_numpy(), m["points"].to_numpy(float)
    status = np.select([pts == m["points_possible"].to_numpy(), pts > 0], ["correct", "partial"], "incorrect")
    out.loc[idx, "points_earned"] = pts
    out.loc[idx, "status"] = status
    out.loc[idx, "correct"] = status == "correct"
    out.loc[idx, "graded_by"] = HUMAN
    return out


def compare_with_human(records: pd.DataFrame, grades: pd.DataFrame) -> pd.DataFrame:
    """Agreement of each judge, and of the judges' combined points (rater "combined"), with the human grades:
    the columns of `judge_agreement` with rater_b = "human"."""
    prepare(records, (), (*_KEYS, "judgements", "points_earned", "points_possible"))
    f = records
    m = _match(f, grades)
    verdicts = judgements_frame(f.loc[m["index"]])
    combined = f.loc[m["index"], [*_KEYS, "points_possible"]].assign(judge="combined",
                                                                     score=f.loc[m["index"], "points_earned"])
    human = m[[*_KEYS, "points_possible"]].assign(judge=HUMAN, score=m["points"].to_numpy(float))
    wide = _wide(pd.concat([verdicts, combined, human], ignore_index=True))
    raters = [*sorted(verdicts["judge"].unique()), "combined"]
    return finish(_pair_rows(wide, raters, [(r, HUMAN) for r in raters]))
