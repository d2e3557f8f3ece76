"""Exam metrics on per-record result frames: accuracy with item-bootstrap CIs, Cohen's kappa macro-averaged
over subjects, the medicina and course-exam scoring rules, and position bias from shuffled runs.

Every function takes a results frame with the columns of `mcqa_toolkit.schema` (one row per
run x item x shuffle) and `by`, the grouping columns (any of model, strategy, language, subject, year,
exam, ...; an empty `by` scores the whole frame as one group). Nothing is printed, plotted or written.

Conventions shared by every function:
- A record is correct only when `correct` is True. Unanswered and refused records are never correct and are
  always reported in their own columns (`n_unanswered`, `n_refused`) beside the score, never hidden in it.
- Annulled items (`answer` < 0) are left out of accuracy and kappa, as the exam authority drops them.
- Item first: an item's accuracy is the share of its records (shuffles) that are correct, and a group's
  accuracy is the mean over items, so an item run with more shuffles does not weigh more.
- Bootstrap CIs resample ITEMS, not records: the shuffles of one item share its content and are not
  independent draws. Each group uses a generator seeded with `seed`, so a group's CI does not depend on
  which other groups are in the frame. Intervals are percentile intervals.
"""
from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from mcqa_toolkit.items import LETTERS, Item, ItemSet
from mcqa_toolkit.schema import STATUSES

DEFAULT_BY = ("model", "strategy", "language")
_ALL = "__all__"  # temporary key when `by` is empty
OUTCOMES = ("correct", "partial", "incorrect", "unanswered")
Judge = Callable[[Item, str], float]


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


def finish(out: pd.DataFrame) -> pd.DataFrame:
    """Drop the constant key `prepare` may have added and number rows 0..n-1."""
    return out.drop(columns=_ALL, errors="ignore").reset_index(drop=True)


def groups(frame: pd.DataFrame, by: list[str]) -> Iterator[tuple[dict, pd.DataFrame]]:
    """(key columns as a dict, sub-frame) for each group, sorted; NaN keys (e.g. year None) kept."""
    for key, g in frame.groupby(by, sort=True, dropna=False):
        yield dict(zip(by, key if isinstance(key, tuple) else (key,))), g


def _status(frame: pd.DataFrame) -> pd.Series:
    status = frame["status"].astype(str)
    bad = sorted(set(status) - set(STATUSES))
    if bad:
        raise ValueError(f"unknown status value(s) {bad}; expected one of {STATUSES}")
    return status


def status_flags(frame: pd.DataFrame) -> pd.DataFrame:
    """Boolean columns correct/answered/unanswered/refused per record, after checking they are consistent."""
    status = _status(frame)
    if frame["correct"].isna().any():
        raise ValueError("column 'correct' has missing values; it must be bool for every record")
    correct = frame["correct"].astype(bool)
    if (correct & (status != "answered")).any():
        raise ValueError("some records are marked correct but their status is not 'answered'")
    return pd.DataFrame({"correct": correct, "answered": status == "answered",
                         "unanswered": status == "unanswered", "refused": status == "refused"}, index=frame.index)


def per_item(f: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """`item_scores` for a frame and `by` already passed through `prepare` (keeps its constant key)."""
    if "answer" in f.columns:
        f = f[f["answer"] >= 0]
        if f.empty:
            raise ValueError("every item is annulled (answer < 0): nothing to score")
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


# ---- exam scoring rules ------------------------------------------------------------------------------------
MEDICINA_WEIGHTS = MappingProxyType({
    "biologia": 23 / 60, "chimica": 15 / 60, "fisica-matematica": 13 / 60,
    "competenze-conoscenze": 4 / 60, "logica": 5 / 60,
})
"""Official Italian medical-school weights: biology, chemistry, math & physics, world knowledge, logic."""
MEDICINA_POINTS = (1.5, -0.4, 0.0)  # correct, answered but wrong, no answer (unanswered or refused)


def medicina_points(frame: pd.DataFrame) -> pd.Series:
    """Points of each record under the medicina rule: +1.5 correct, -0.4 wrong, 0 unanswered or refused."""
    flags = status_flags(frame)
    right, wrong, blank = MEDICINA_POINTS
    return pd.Series(np.select([flags["correct"], flags["answered"]], [right, wrong], blank),
                     index=frame.index, name="points")


def medicina_final(subject_means: Mapping[str, float], weights: Mapping[str, float] = MEDICINA_WEIGHTS) -> float:
    """Final score = 60 x sum_s weight_s x (mean points per question in subject s)."""
    missing = [s for s in weights if s not in subject_means]
    if missing:
        raise ValueError(f"medicina_final needs a mean for every weighted subject; missing {missing}")
    return 60.0 * float(sum(w * subject_means[s] for s, w in weights.items()))


def medicina_score(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY, subject: str = "subject",
                   weights: Mapping[str, float] = MEDICINA_WEIGHTS) -> pd.DataFrame:
    """Medicina score per group: one column per weighted subject (mean points per question: per item the mean
    over shuffles, then the mean over items), weighted_mean, score = 60 x weighted_mean, n_unanswered,
    n_refused, note. A group lacking a weighted subject gets NaN with the reason in `note`."""
    f, by = prepare(frame, by, ("item_id", "correct", "status", subject))
    unknown = sorted(set(f[subject].astype(str)) - set(weights))
    if unknown:
        raise ValueError(f"subjects {unknown} have no medicina weight; weights cover {list(weights)}")
    f = f.assign(points=medicina_points(f), **status_flags(f)[["unanswered", "refused"]].astype(int))
    item_pts = f.groupby([*by, subject, "item_id"], sort=True, dropna=False)["points"].mean()
    out = item_pts.groupby(level=[*by, subject], sort=True, dropna=False).mean().unstack(subject)
    out = out.reindex(columns=list(weights))
    out["weighted_mean"] = (out[list(weights)] * pd.Series(weights)).sum(axis=1, min_count=len(weights))
    out["score"] = 60.0 * out["weighted_mean"]
    counts = f.groupby(by, sort=True, dropna=False)[["unanswered", "refused"]].sum().add_prefix("n_")
    out = out.join(counts)
    absent = out[list(weights)].isna()
    out["note"] = absent.apply(lambda r: f"missing subject(s) {list(r.index[r])}" if r.any() else "", axis=1)
    out.columns.name = None
    return finish(out.reset_index())


def _option_set(x: Any) -> frozenset[int]:
    """Option indices from an index, a collection of indices or letters such as "A,C" / "B D"."""
    if isinstance(x, str):
        parts = [p for p in re.split(r"[\s,;]+", x.strip().upper()) if p]
        if not parts or any(len(p) != 1 or p not in LETTERS for p in parts):
            raise ValueError(f"cannot read option letters from {x!r}")
        return frozenset(LETTERS.index(p) for p in parts)
    if isinstance(x, (int, np.integer)):
        return frozenset({int(x)})
    return frozenset(int(v) for v in x)


def course_exam_points(item: Item, response: Any, judge: Judge | None = None) -> tuple[float, str]:
    """(points earned, outcome) for one response; outcome is correct | partial | incorrect | unanswered.

    single: exact match of the option (index or letter). truefalse: exact match of the whole tuple of bools.
    multi: the key set earns full points, a non-empty strict subset earns 2 points (capped at the item's
    points), anything else 0; responses are indices or letters ("A,C"). Items the course-exam loader kept as
    "short" because their options did not parse (meta options_parsed False) are scored by these letter rules
    from meta["question_type"]. short: `judge(item, response)` must return a number in [0, item.points].
    None, a negative index, "" or an empty collection is unanswered (0 points).
    """
    pts = float(item.points)
    if item.answer is None:
        raise ValueError(f"item {item.item_id} has no key (annulled): it cannot be scored")
    kind = item.answer_type
    if kind == "short" and item.meta.get("options_parsed") is False:
        kind = {"SingleChoice": "single", "MultipleChoice": "multi"}.get(item.meta.get("question_type"), kind)
    blank = response is None or (isinstance(response, (str, tuple, list, set, frozenset)) and len(response) == 0)
    if blank or (isinstance(response, (int, np.integer)) and response < 0):
        return 0.0, "unanswered"
    if kind in ("single", "multi"):
        chosen, key = _option_set(response), _option_set(item.answer)
        if chosen == key:
            return pts, "correct"
        return (min(2.0, pts), "partial") if kind == "multi" and chosen < key else (0.0, "incorrect")
    if kind == "truefalse":
        same = tuple(bool(x) for x in response) == tuple(bool(x) for x in item.answer)
        return (pts, "correct") if same else (0.0, "incorrect")
    if judge is None:
        raise ValueError(f"item {item.item_id} is a short answer: pass judge=callable(item, response) -> 0..points")
    got = judge(item, str(response))
    if isinstance(got, bool) or not isinstance(got, (int, float, np.number)) or not 0 <= float(got) <= pts:
        raise ValueError(f"judge returned {got!r} for item {item.item_id}; expected a number in [0, {pts}]")
    got = float(got)
    return got, "correct" if got == pts else "partial" if got > 0 else "incorrect"


def course_exam_records(frame: pd.DataFrame, items: ItemSet, judge: Judge | None = None,
                        response: str = "response") -> pd.DataFrame:
    """`frame` plus exam, answer_type, points_earned, points_possible and outcome per record.

    Responses come from column `response` (index, tuple of indices, tuple of bools or text by answer type);
    when that column is absent, `choice` is used, which only works if every item is single choice. Records
    whose `status` is not 'answered' are unanswered whatever the response. Loops over records because the
    judge is a per-item callable (course exams are small: tens of questions).
    """
    col = response if response in frame.columns else "choice"
    f, _ = prepare(frame, (), ("item_id", col))
    unknown = sorted(set(f["item_id"]) - set(items.ids))
    if unknown:
        raise ValueError(f"item_id(s) {unknown[:5]} are not in the ItemSet")
    its = [items[i] for i in f["item_id"]]
    if col == "choice" and any(it.answer_type != "single" for it in its):
        raise ValueError(f"non single-choice items need a {response!r} column with the parsed response")
    answered = f["status"].eq("answered") if "status" in f.columns else pd.Series(True, index=f.index)
    scored = [course_exam_points(it, r if ok else None, judge) for it, r, ok in zip(its, f[col], answered)]
    return finish(f.assign(exam=[it.exam for it in its], answer_type=[it.answer_type for it in its],
                           points_earned=[p for p, _ in scored], points_possible=[float(it.points) for it in its],
                           outcome=[o for _, o in scored]))


def course_exam_scores(frame: pd.DataFrame, items: ItemSet, judge: Judge | None = None,
                       by: str | Sequence[str] = ("model", "strategy"), response: str = "response") -> pd.DataFrame:
    """Points per group x exam (per item the mean over shuffles, summed over items).
    Columns: by..., exam, n_items, points_earned, points_possible, score_pct, n_correct, n_partial,
    n_incorrect, n_unanswered (record counts)."""
    f, by = prepare(frame, by, ("item_id",))
    rec = course_exam_records(f, items, judge, response)
    rec = rec.join(pd.get_dummies(rec["outcome"]).reindex(columns=OUTCOMES, fill_value=False).astype(int))
    item_pts = rec.groupby([*by, "exam", "item_id"], sort=True, dropna=False).agg(
        points_earned=("points_earned", "mean"), points_possible=("points_possible", "first"),
        **{f"n_{o}": (o, "sum") for o in OUTCOMES})
    out = item_pts.groupby(level=[*by, "exam"], sort=True, dropna=False).sum()
    out.insert(0, "n_items", item_pts.groupby(level=[*by, "exam"], sort=True, dropna=False).size())
    out.insert(3, "score_pct", 100 * out["points_earned"] / out["points_possible"])
    return finish(out.reset_index())


def compare_to_students(scores: pd.DataFrame, students: pd.DataFrame) -> pd.DataFrame:
    """Place each exam score among the students who sat it.

    `students` has one row per exam with the course-exam metadata columns exam (or exam_id), score_max,
    score_avg, score_median, score_standard_deviation. The model's score is rescaled to the exam's scale,
    model_score = points_earned / points_possible x score_max (the benchmark may hold only part of the exam);
    z = (model_score - score_avg) / sd; percentile = 100 Phi(z), a normal approximation (real score
    distributions are bounded and skewed, so read it as indicative). sd <= 0 gives NaN with a note.
    """
    need = ("exam", "score_max", "score_avg", "score_median", "score_standard_deviation")
    students = students.rename(columns={"exam_id": "exam"})
    prepare(students, (), need)
    prepare(scores, (), ("exam", "points_earned", "points_possible"))
    missing = sorted(set(scores["exam"]) - set(students["exam"]))
    if missing:
        raise ValueError(f"no student statistics for exam(s) {missing}")
    out = scores.merge(students[list(need)], on="exam", how="left", validate="many_to_one")
    num = ["points_earned", "points_possible", *need[1:]]
    out[num] = out[num].apply(pd.to_numeric, errors="raise").astype(float)
    out["model_score"] = out["points_earned"] / out["points_possible"] * out["score_max"]
    sd = out["score_standard_deviation"].where(out["score_standard_deviation"] > 0)
    out["z"] = (out["model_score"] - out["score_avg"]) / sd
    out["percentile"] = 100 * sps.norm.cdf(out["z"])
    out["above_median"] = out["model_score"] > out["score_median"]
    out["note"] = np.where(sd.isna(), "student sd missing or 0: z and percentile are NaN", "")
    return out


# ---- position bias from shuffled runs ------------------------------------------------------------------------
def position_distribution(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Chosen shown positions per group x n_options: count, share of answered records and the uniform share
    1/k, with every position 0..k-1 present (zero-filled). Unanswered/refused records are not positions."""
    f, by = prepare(frame, by, ("n_options", "choice_position", "status"))
    answered = _status(f) == "answered"
    pos = f.loc[answered, "choice_position"]
    if ((pos < 0) | (pos >= f.loc[answered, "n_options"])).any():
        raise ValueError("answered records need 0 <= choice_position < n_options")
    strata = f[[*by, "n_options"]].drop_duplicates().reset_index(drop=True)
    full = strata.loc[strata.index.repeat(strata["n_options"])]
    full = full.assign(position=full.groupby(level=0).cumcount()).reset_index(drop=True)
    counts = f[answered].groupby([*by, "n_options", "choice_position"], dropna=False).size()
    counts = counts.rename("count").rename_axis(index={"choice_position": "position"}).reset_index()
    out = full.merge(counts, on=[*by, "n_options", "position"], how="left").fillna({"count": 0})
    out["count"] = out["count"].astype(int)
    total = out.groupby([*by, "n_options"], dropna=False)["count"].transform("sum")
    out["share"] = out["count"] / total.where(total > 0)
    out["uniform"] = 1.0 / out["n_options"]
    return finish(out.sort_values([*by, "n_options", "position"]))


def position_bias(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Position bias (BPC) per group x n_options, from the distribution of chosen shown positions.

    Stratified by n_options because uniform means 1/k. Reported: tvd = total-variation distance from uniform,
    0.5 x sum_j |share_j - 1/k| (0 = no bias, 1 - 1/k = always the same position; `tvd_max`), and the chi2
    goodness-of-fit of the position counts against uniform (dof = k - 1) with its p-value. Run it on
    shuffled runs, where the key is uniform over positions, so any departure is the model's, not the key's.
    Columns: by..., n_options, n_records, n_answered, n_unanswered, n_refused, tvd, tvd_max, chi2, dof,
    p_value, note.
    """
    f, by = prepare(frame, by, ("n_options", "choice_position", "status"))
    keys = [*by, "n_options"]
    d = position_distribution(f, by)
    if _ALL in by:  # position_distribution's finish() dropped the constant key
        d = d.assign(**{_ALL: "all"})
    d["n"] = d.groupby(keys, dropna=False)["count"].transform("sum")
    d["dev"] = (d["share"] - d["uniform"]).abs()
    d["chi2_term"] = (d["count"] - d["n"] * d["uniform"]) ** 2 / (d["n"] * d["uniform"]).where(d["n"] > 0)
    g = d.groupby(keys, sort=True, dropna=False)
    out = pd.DataFrame({"n_answered": g["count"].sum(), "tvd": 0.5 * g["dev"].sum(min_count=1),
                        "chi2": g["chi2_term"].sum(min_count=1), "min_expected": g["n"].first() / g["count"].size()})
    status = _status(f)
    flags = pd.DataFrame({s: (status == s).astype(int) for s in ("unanswered", "refused")})
    counts = pd.concat([f[keys], flags], axis=1).groupby(keys, sort=True, dropna=False)
    out = out.join(counts[["unanswered", "refused"]].sum().add_prefix("n_")).join(counts.size().rename("n_records"))
    out = out.reset_index()
    out["tvd_max"] = 1 - 1 / out["n_options"]
    out["dof"] = out["n_options"] - 1
    out["p_value"] = sps.chi2.sf(out["chi2"], out["dof"])
    out["note"] = np.select([out["n_answered"] == 0, out["min_expected"] < 5],
                            ["no answered records", "expected count < 5 per position: chi2 p-value approximate"], "")
    cols = [*keys, "n_records", "n_answered", "n_unanswered", "n_refused", "tvd", "tvd_max", "chi2", "dof",
            "p_value", "note"]
    return finish(out[cols])


def accuracy_by_position(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Accuracy per group x n_options x shown position of the key (correct_position; annulled rows dropped).
    Columns: by..., n_options, correct_position, n_records, n_correct, n_unanswered, n_refused, accuracy."""
    f, by = prepare(frame, by, ("n_options", "correct_position", "correct", "status"))
    f = f[f["correct_position"] >= 0]
    if f.empty:
        raise ValueError("no record has a key position (all annulled)")
    keys = [*by, "n_options", "correct_position"]
    flags = status_flags(f)[["correct", "unanswered", "refused"]].astype(int)
    g = pd.concat([f[keys], flags], axis=1).groupby(keys, sort=True, dropna=False)
    out = g.sum().add_prefix("n_")
    out.insert(0, "n_records", g.size())
    out["accuracy"] = out["n_correct"] / out["n_records"]
    return finish(out.reset_index())


def shuffle_consistency(frame: pd.DataFrame, by: str | Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Per group x item: the share of its shuffles that chose the modal ORIGINAL option (`choice`, not the
    shown position), over all its records (an unanswered shuffle did not choose the mode). Ties between
    modes go to the lowest option index. Columns: by..., item_id, n_shuffles, modal_choice, modal_correct,
    n_distinct, consistency, note (NaN with a reason for a single shuffle or no answered record)."""
    f, by = prepare(frame, by, ("item_id", "choice", "status"))
    keys = [*by, "item_id"]
    answered = _status(f) == "answered"
    n = f.groupby(keys, sort=True, dropna=False).size().rename("n_shuffles")
    c = f[answered].groupby([*keys, "choice"], dropna=False).size().rename("k").reset_index()
    c["n_distinct"] = c.groupby(keys, dropna=False)["choice"].transform("size")
    top = c.sort_values([*keys, "k", "choice"], ascending=[True] * len(keys) + [False, True])
    top = top.drop_duplicates(keys).set_index(keys).rename(columns={"choice": "modal_choice"})
    out = n.to_frame().join(top[["modal_choice", "k", "n_distinct"]])
    out["modal_choice"] = out["modal_choice"].astype("Int64")
    if "answer" in f.columns:
        out = out.join(f.groupby(keys, dropna=False)["answer"].first())
        out["modal_correct"] = (out["modal_choice"] == out.pop("answer")).astype("boolean")
    out["consistency"] = (out.pop("k") / out["n_shuffles"]).where(out["n_shuffles"] > 1)
    out["note"] = np.select([out["n_shuffles"] < 2, out["modal_choice"].isna()],
                            ["one shuffle: consistency undefined", "no answered shuffle"], "")
    out.loc[out["modal_choice"].isna(), "consistency"] = np.nan
    out["n_distinct"] = out["n_distinct"].fillna(0).astype(int)
    return finish(out.reset_index())
