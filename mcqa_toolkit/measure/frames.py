"""Shared plumbing for the metric modules: column checks, grouping, answer-status flags, per-item scores.

`prepare` checks a results frame (columns of `mcqa_toolkit.records.columns`) and normalises `by`; `finish` removes the
constant key `prepare` adds when `by` is empty. Used by every module of `measure`.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import pandas as pd

from mcqa_toolkit.records.columns import ANSWERED, STATUSES

DEFAULT_BY = ("model", "strategy", "language")
_ALL = "__all__"  # temporary key when `by` is empty


def prepare(frame: pd.DataFrame, by: str | Sequence[str], needed: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """Check columns and non-emptiness; returns (frame, by as a list), adding a constant key when `by` is empty."""
    by = [by] if isinstance(by, str) else list(by)
    missing = [c for c in dict.fromkeys([*by, *needed]) if c not in frame.columns]
    if missing:
        raise ValueError(f"results frame lacks column(s) {missing}; it has {list(frame.columns)}")
    if frame.empty:
        raise ValueError("results frame is empty: nothing to score")
    if not by:
        return frame.assign(**{_ALL: "all"}), [_ALL]
    return frame, by


def two_conditions(frame: pd.DataFrame, by: str | Sequence[str], needed: Sequence[str], between: str, a: str,
                   b: str) -> tuple[pd.DataFrame, list[str]]:
    """`prepare`, then the records of conditions `a` and `b` of column `between` (which cannot also group)."""
    f, by = prepare(frame, by, needed)
    if between in by:
        raise ValueError(f"{between!r} is what is compared; it cannot also be in `by`")
    missing = [v for v in (a, b) if v not in set(f[between])]
    if missing:
        raise ValueError(f"{between} value(s) {missing} not in the frame")
    return f[f[between].isin([a, b])], by


def finish(out: pd.DataFrame) -> pd.DataFrame:
    """Drop the constant key `prepare` may have added and number rows 0..n-1."""
    return out.drop(columns=_ALL, errors="ignore").reset_index(drop=True)


def groups(frame: pd.DataFrame, by: list[str]) -> Iterator[tuple[dict, pd.DataFrame]]:
    """(key columns as a dict, sub-frame) for each group, sorted; NaN keys (e.g. year None) kept."""
    for key, g in frame.groupby(by, sort=True, dropna=False):
        yield dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)), g


def check_status(frame: pd.DataFrame) -> pd.Series:
    """The `status` column, after checking every value is in the vocabulary of `records.columns.STATUSES`."""
    status = frame["status"].astype(str)
    bad = sorted(set(status) - set(STATUSES))
    if bad:
        raise ValueError(f"unknown status value(s) {bad}; expected one of {STATUSES}")
    return status


def status_flags(frame: pd.DataFrame) -> pd.DataFrame:
    """Boolean columns correct/answered/unanswered/refused/error per record (answered = a response was read
    and graded: correct, partial or incorrect), after checking `correct` agrees with `status`."""
    status = check_status(frame)
    if frame["correct"].isna().any():
        raise ValueError("column 'correct' has missing values; it must be bool for every record")
    correct = frame["correct"].astype(bool)
    if (correct != (status == "correct")).any():
        raise ValueError("column 'correct' disagrees with status: correct must be exactly status == 'correct'")
    return pd.DataFrame({"correct": correct, "answered": status.isin(ANSWERED),
                         "unanswered": status == "unanswered", "refused": status == "refused",
                         "error": status == "error"}, index=frame.index)


def single_answer(frame: pd.DataFrame) -> pd.DataFrame:
    """The records of single-answer items (all records when there is no `answer_type` column): the analyses of
    chosen options (accuracy, kappa, positions, IRT) are about one chosen letter among k."""
    if "answer_type" not in frame.columns:
        return frame
    return frame[frame["answer_type"] == "single"]


def per_item(f: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """`item_scores` for a frame and `by` already passed through `prepare` (keeps its constant key)."""
    f = single_answer(f)
    if "answer" in f.columns:
        f = f[f["answer"] >= 0]
    if f.empty:
        raise ValueError("no single-answer item with a key (all annulled or of other types): nothing to score")
    keys = [*by, "item_id"]
    extra = [c for c in ("subject", "n_options") if c in f.columns and c not in keys]
    flags = status_flags(f).astype(int)
    g = pd.concat([f[keys + extra], flags], axis=1).groupby(keys, sort=True, dropna=False)
    out = g[["correct", "answered", "unanswered", "refused"]].sum().add_prefix("n_")
    out.insert(0, "n_records", g.size())
    if extra:
        out = out.join(g[extra].first())
    out["accuracy"] = out["n_correct"] / out["n_records"]
    return out.reset_index()

