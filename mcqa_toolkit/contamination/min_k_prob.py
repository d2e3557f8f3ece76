"""The Min-K% prob detector (Shi et al. 2024): its item score, and in ordinary runs its relation to accuracy.

Min-K% prob itself is computed in one place, `scoring.min_k.min_k_prob`: every run's min_k.parquet
(`scoring.min_k.min_k_table`, read back by `records.results.load_min_k`) and the audit's familiarity table
(contamination.familiarity) call it. Here are the pure functions on those tables: the detector's score (higher =
more familiar) and, for runs that measured Min-K% (notebooks/14_contamination), its correlation with accuracy.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from mcqa_toolkit.measure.compare import correlation_row
from mcqa_toolkit.measure.frames import finish, groups, per_item, prepare
from mcqa_toolkit.measure.scores import item_scores

__all__ = ["min_k_score", "min_k_accuracy_correlation", "contamination_frame", "contamination_correlation"]


def min_k_score(familiarity: pd.DataFrame) -> pd.Series:
    """-min_k_prob: the mean of the k% lowest token log-probs (higher = more familiar)."""
    return -familiarity["min_k_prob"].astype(float)


def min_k_accuracy_correlation(min_k: pd.DataFrame, results: pd.DataFrame,
                               by: str | Sequence[str] = ("model",), value: str = "min_k") -> pd.DataFrame:
    """Per group, the correlation across items between Min-K% prob and accuracy (share of shuffles correct).
    `min_k` has columns by..., item_id, value; `results` is a results frame. A negative r means items the model
    finds more familiar are answered better. Columns: by..., n, pearson_r, pearson_p, spearman_rho,
    spearman_p, note."""
    wanted = [by] if isinstance(by, str) else list(by)
    mk, by = prepare(min_k, wanted, ("item_id", value))
    res, _ = prepare(results, wanted, ("item_id", "correct", "status"))
    if mk.duplicated([*by, "item_id"]).any():
        raise ValueError(f"min_k has several rows per {wanted} x item_id")
    acc = per_item(res, by)
    m = mk[[*by, "item_id", value]].merge(acc[[*by, "item_id", "accuracy"]], on=[*by, "item_id"])
    if m.empty:
        raise ValueError("no item is in both min_k and results")
    return finish(pd.DataFrame([{**key, **correlation_row(g[value], g["accuracy"])} for key, g in groups(m, by)]))


def _min_k_split(min_k: pd.DataFrame, by: Sequence[str]) -> tuple[list[str], list[str]]:
    shared = [c for c in by if c in min_k.columns]
    if "model" not in shared:
        raise ValueError("`by` must contain 'model' (Min-K% prob is per model x item)")
    return shared, [c for c in by if c not in min_k.columns]


def contamination_frame(min_k: pd.DataFrame, records: pd.DataFrame,
                        by: Sequence[str] = ("model", "strategy")) -> pd.DataFrame:
    """Per group x item: Min-K% prob (`min_k_prob`, from the runs' min_k.parquet) beside the share of
    shuffles correct. Columns: by..., item_id, language, parallel_id, min_k_prob, accuracy, n_records."""
    prepare(min_k, (), ["model", "item_id", "min_k_prob"])
    shared, _ = _min_k_split(min_k, by)
    acc = item_scores(records, by)[[*by, "item_id", "accuracy", "n_records"]]
    extra = [c for c in ("language", "parallel_id") if c in min_k.columns and c not in by]
    m = min_k[[*shared, "item_id", *extra, "min_k_prob"]].merge(acc, on=[*shared, "item_id"])
    if m.empty:
        raise ValueError("no item is in both min_k and the records")
    return m[[*by, "item_id", *extra, "min_k_prob", "accuracy", "n_records"]].reset_index(drop=True)


def contamination_correlation(min_k: pd.DataFrame, records: pd.DataFrame,
                              by: Sequence[str] = ("model", "strategy")) -> pd.DataFrame:
    """`min_k_accuracy_correlation` per group; columns of `by` that min_k lacks (e.g. strategy) split
    the records. Columns: by..., n, pearson_r, pearson_p, spearman_rho, spearman_p, note."""
    shared, split = _min_k_split(min_k, by)
    parts = records.groupby(split, sort=True, dropna=False) if split else [((), records)]
    frames = []
    for key, part in parts:
        r = min_k_accuracy_correlation(min_k, part, by=shared, value="min_k_prob")
        frames.append(r.assign(**dict(zip(split, key if isinstance(key, tuple) else (key,), strict=True))))
    out = pd.concat(frames, ignore_index=True)
    return out[[*by, *[c for c in out.columns if c not in by]]]
