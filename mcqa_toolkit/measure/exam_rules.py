"""Exam scoring rules on result frames: the Italian medical entrance test (+1.5 / -0.4 / 0, subject weights,
x60) and the MIT course exams (exact single choice and true/false, partial credit for multiple choice, a judge
for short answers) with the comparison to the students' published statistics.
"""
from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from mcqa_toolkit.measure.frames import DEFAULT_BY, finish, prepare, status_flags
from mcqa_toolkit.items import LETTERS, Item, ItemSet

OUTCOMES = ("correct", "partial", "incorrect", "unanswered")
Judge = Callable[[Item, str], float]

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

