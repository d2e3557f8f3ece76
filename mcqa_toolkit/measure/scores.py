"""Accuracy with item-bootstrap CIs and Cohen's kappa macro-averaged over subjects, on per-record result frames.

Every function takes a results frame with the columns of `mcqa_toolkit.records.columns` (one row per
run x item x shuffle) and `by`, the grouping columns (any of model, strategy, language, subject, year,
exam, ...; an empty `by` scores the whole frame as one group). Nothing is printed, plotted or written.

Conventions shared by every function:
- A record is correct only when `correct` is True. Unanswered and refused records are never correct and are
  always reported in their own columns (`n_unanswered`, `n_refused`) beside the score, never hidden in it.
- Annulled items (`answer` < 0) are left out of accuracy and kappa, as the exam authority drops them, and so are
  records of the other question types (multi, truefalse, short: `answer` is -1 and `answer_type` is not
  single); their points are `exam_rules.course_exam_scores`'s business.
- Item first: an item's accuracy is the share of its records (shuffles) that are correct, and a group's
  accuracy is the mean over items, so an item run with more shuffles does not weigh more.
- Bootstrap CIs resample ITEMS, not records: the shuffles of one item share its content and are not
  independent draws. Each group uses a generator seeded with `seed`, so a group's CI does not depend on
  which other groups are in the frame. Intervals are percentile intervals.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcqa_toolkit.measure.frames import DEFAULT_BY, finish, groups, per_item, prepare

__all__ = ["item_scores", "bootstrap_means", "accuracy", "kappa_by_subject", "macro_average", "kappa"]


def item_scores(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """One row per group x item: n_records, n_correct, n_answered, n_unanswered, n_refused and
    accuracy = n_correct / n_records (share of shuffles correct). Annulled items (answer < 0) are dropped;
    `subject` and `n_options` are carried along when present."""
    f, by = prepare(frame, by, ("item_id", "correct", "status"))
    return finish(per_item(f, by))


def _check_boot(n_boot: int, level: float) -> None:
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0 (0 = no bootstrap), got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")


def bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Column means of `values` (n_items, m) over `n_boot` resamples of its rows: shape (n_boot, m).
    Resamples are drawn in chunks of about 4M cells so that large item sets (MMLU: 14k) stay in memory."""
    n, m = values.shape
    out = np.empty((n_boot, m))
    step = max(1, 4_000_000 // (n * m))
    for start in range(0, n_boot, step):
        idx = rng.integers(0, n, size=(min(step, n_boot - start), n))
        out[start:start + len(idx)] = values[idx].mean(axis=1)
    return out


def _interval(draws: np.ndarray, level: float) -> tuple[float, float]:
    a = (1 - level) / 2
    lo, hi = np.quantile(draws, [a, 1 - a])
    return float(lo), float(hi)


def _ci_note(n_items: int, n_boot: int) -> str:
    if n_boot == 0:
        return "n_boot=0: no CI"
    return "fewer than 2 items: no CI" if n_items < 2 else ""


def accuracy(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY, n_boot: int = 1000, level: float = 0.95,
             seed: int = 0) -> pd.DataFrame:
    """Accuracy per group with an item-bootstrap CI.

    Columns: by..., n_items, n_records, n_correct, n_answered, n_unanswered, n_refused, accuracy (mean over
    items of the share of shuffles correct; unanswered/refused count as not correct), accuracy_answered
    (n_correct / n_answered over records), ci_low, ci_high, note (why a value is NaN, else "").
    """
    _check_boot(n_boot, level)
    f, by = prepare(frame, by, ("item_id", "correct", "status"))
    items = per_item(f, by)
    rows = []
    for key, g in groups(items, by):
        acc = g["accuracy"].to_numpy(float)
        sums = g[["n_records", "n_correct", "n_answered", "n_unanswered", "n_refused"]].sum()
        notes = [_ci_note(len(acc), n_boot)]
        lo = hi = np.nan
        if not notes[0]:
            lo, hi = _interval(bootstrap_means(acc[:, None], n_boot, np.random.default_rng(seed))[:, 0], level)
        if sums["n_answered"] == 0:
            notes.append("no answered records: accuracy_answered is NaN")
        rows.append({**key, "n_items": len(acc), **sums.astype(int).to_dict(), "accuracy": acc.mean(),
                     "accuracy_answered": sums["n_correct"] / sums["n_answered"] if sums["n_answered"] else np.nan,
                     "ci_low": lo, "ci_high": hi, "note": "; ".join(n for n in notes if n)})
    return finish(pd.DataFrame(rows))


def _with_chance(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    items = per_item(frame, by)
    if "n_options" not in items.columns:
        raise ValueError("kappa needs the 'n_options' column (each item's own number of options)")
    if (items["n_options"] < 2).any() or items["n_options"].isna().any():
        raise ValueError("kappa needs n_options >= 2 for every item")
    return items.assign(chance=1.0 / items["n_options"])


def kappa_by_subject(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY,
                     subject: str | None = "subject") -> pd.DataFrame:
    """Cohen's kappa per group x subject: kappa = (acc - chance) / (1 - chance).

    chance is the mean of 1/k over the subject's items, k = each item's own n_options. For a subject whose
    items all have k options this is exactly UNED's (acc - 1/k) / (1 - 1/k); for a subject mixing 3- and
    4-option items it equals sum_i(acc_i - 1/k_i) / sum_i(1 - 1/k_i): the expected accuracy of a uniform
    random guesser on those very items, so random answering still gives 0 and a perfect score 1.
    `subject=None` treats all items of a group as one subject. Columns: by..., subject, n_items, accuracy,
    chance, kappa.
    """
    f, by = prepare(frame, by, ("item_id", "correct", "status", "n_options") + ((subject,) if subject else ()))
    keys = [*by, subject] if subject else by
    out = _with_chance(f, keys).groupby(keys, sort=True, dropna=False).agg(
        n_items=("item_id", "size"), accuracy=("accuracy", "mean"), chance=("chance", "mean")).reset_index()
    out["kappa"] = (out["accuracy"] - out["chance"]) / (1 - out["chance"])
    return finish(out)


def macro_average(scores: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY, value: str = "kappa") -> pd.DataFrame:
    """Arithmetic mean of `value` over the rows (subjects) of each group, each subject weighing the same (UNED).
    Columns: by..., n_subjects, value."""
    f, by = prepare(scores, by, (value,))
    out = f.groupby(by, sort=True, dropna=False)[value].agg(n_subjects="count", mean="mean").reset_index()
    return finish(out.rename(columns={"mean": value}))


def kappa(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY, subject: str | None = "subject",
          n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Kappa macro-averaged over subjects (see `kappa_by_subject`) with a subject-stratified item bootstrap CI
    (items are resampled within their subject, so every resample keeps the subject mix).
    Columns: by..., n_subjects, n_items, kappa, ci_low, ci_high, note."""
    _check_boot(n_boot, level)
    f, by = prepare(frame, by, ("item_id", "correct", "status", "n_options") + ((subject,) if subject else ()))
    items = _with_chance(f, [*by, subject] if subject else by)
    rows = []
    for key, g in groups(items, by):
        subjects = [s for _, s in g.groupby(subject, sort=True, dropna=False)] if subject else [g]
        means = np.array([s[["accuracy", "chance"]].to_numpy(float).mean(axis=0) for s in subjects])
        k = float(np.mean((means[:, 0] - means[:, 1]) / (1 - means[:, 1])))
        note = _ci_note(len(g), n_boot)
        lo = hi = np.nan
        if not note:
            rng = np.random.default_rng(seed)
            draws = [bootstrap_means(s[["accuracy", "chance"]].to_numpy(float), n_boot, rng) for s in subjects]
            lo, hi = _interval(np.mean([(d[:, 0] - d[:, 1]) / (1 - d[:, 1]) for d in draws], axis=0), level)
        rows.append({**key, "n_subjects": len(subjects), "n_items": len(g), "kappa": k,
                     "ci_low": lo, "ci_high": hi, "note": note})
    return finish(pd.DataFrame(rows))


