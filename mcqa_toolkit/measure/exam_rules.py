"""Exam scoring rules on result frames: the Italian medical entrance test (+1.5 / -0.4 / 0, subject weights,
x60) and the MIT course exams (exact single choice and true/false, partial credit for multiple choice, a judge
for short answers) with the comparison to the students' published statistics.

The course-exam rule for one response (`course_exam_points`) lives in records.grading, where the record factory
grades every record as it is made; here the records' points are summed per exam and compared with the students.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
import pandas as pd
from scipy import stats as sps

from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.frames import DEFAULT_BY, check_status, finish, prepare, status_flags
from mcqa_toolkit.records.columns import STATUSES

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


def _per_item(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One row per group x exam x item: mean points over its graded (non-error) records and status counts."""
    status = check_status(frame)
    flags = pd.DataFrame({f"n_{s}": (status == s).astype(int) for s in STATUSES}, index=frame.index)
    graded = frame["points_earned"].where(status != "error")
    if graded.isna().ne(status == "error").any():
        raise ValueError("points_earned is missing on records whose status is not 'error'")
    f = pd.concat([frame[[*by, "exam", "item_id", "points_possible"]], flags], axis=1).assign(graded=graded)
    g = f.groupby([*by, "exam", "item_id"], sort=True, dropna=False)
    out = g[[f"n_{s}" for s in STATUSES]].sum()
    out.insert(0, "points_possible", g["points_possible"].first())
    out.insert(0, "points_earned", g["graded"].mean())  # NaN when every record of the item is an error
    return out.reset_index()


def course_exam_scores(frame: pd.DataFrame, by: str | Sequence[str] = ("model", "strategy"),
                       overall: bool = False) -> pd.DataFrame:
    """Exam points per group x exam from the records' own grades (records.factory grades every record).

    Per item the points are the mean over its shuffles; records with status `error` (an unreadable judge
    verdict) are left out of that mean, never counted as 0, and an item whose every record is an error is not
    graded. Columns: by..., exam, n_items, n_graded, points_earned (sum over graded items), points_possible
    (sum over all items), points_graded (sum over graded items), score_pct (100 earned / graded), and record
    counts n_correct, n_partial, n_incorrect, n_unanswered, n_refused, n_error. `overall=True` adds one row
    per group with exam "overall" summing every exam.
    """
    f, by = prepare(frame, by, ("item_id", "exam", "status", "points_earned", "points_possible"))
    items = _per_item(f, by)
    items["points_graded"] = items["points_possible"].where(items["points_earned"].notna(), 0.0)
    items["graded"] = items["points_earned"].notna().astype(int)
    sums = ["points_earned", "points_possible", "points_graded", "graded", *(f"n_{s}" for s in STATUSES)]
    out = items.groupby([*by, "exam"], sort=True, dropna=False)[sums].sum(min_count=0)
    out.insert(0, "n_items", items.groupby([*by, "exam"], sort=True, dropna=False).size())
    out = out.reset_index()
    if overall:
        total = out.groupby(by, sort=True, dropna=False)[["n_items", *sums]].sum().reset_index()
        out = pd.concat([out, total.assign(exam="overall")], ignore_index=True)
    out = out.rename(columns={"graded": "n_graded"})
    out.insert(out.columns.get_loc("points_graded") + 1, "score_pct",
               100 * out["points_earned"] / out["points_graded"].where(out["points_graded"] > 0))
    return finish(out)


def compare_to_students(scores: pd.DataFrame, students: pd.DataFrame) -> pd.DataFrame:
    """Place each exam score among the students who sat it (the course-exam benchmark's comparison.json).

    `students` has one row per exam with the course-exam metadata columns exam (or exam_id), score_max,
    score_avg, score_median, score_standard_deviation. The model's score is rescaled to the exam's scale,
    model_score = points_earned / points_graded x score_max (the benchmark may hold only part of the exam, and
    questions whose grade is an error are left out rather than counted as 0; points_possible is used when
    there is no points_graded column); z = (model_score - score_avg) / sd; percentile = 100 Phi(z), a normal
    approximation (real score distributions are bounded and skewed, so read it as indicative). sd <= 0 gives
    NaN with a note. Rows whose exam is "overall" are not compared (there is no student total across exams).
    """
    need = ("exam", "score_max", "score_avg", "score_median", "score_standard_deviation")
    students = students.rename(columns={"exam_id": "exam"})
    prepare(students, (), need)
    prepare(scores, (), ("exam", "points_earned", "points_possible"))
    scores = scores[scores["exam"] != "overall"]
    missing = sorted(set(scores["exam"]) - set(students["exam"]))
    if missing:
        raise ValueError(f"no student statistics for exam(s) {missing}")
    out = scores.merge(students[list(need)], on="exam", how="left", validate="many_to_one")
    denominator = "points_graded" if "points_graded" in out.columns else "points_possible"
    num = ["points_earned", denominator, *need[1:]]
    out[num] = out[num].apply(pd.to_numeric, errors="raise").astype(float)
    out["model_score"] = out["points_earned"] / out[denominator].where(out[denominator] > 0) * out["score_max"]
    sd = out["score_standard_deviation"].where(out["score_standard_deviation"] > 0)
    out["z"] = (out["model_score"] - out["score_avg"]) / sd
    out["percentile"] = 100 * sps.norm.cdf(out["z"])
    out["above_median"] = out["model_score"] > out["score_median"]
    out["note"] = np.where(sd.isna(), "student sd missing or 0: z and percentile are NaN", "")
    return out.reset_index(drop=True)


def student_statistics(items: ItemSet) -> pd.DataFrame:
    """One row per exam of `items` with the student statistics the course-exam loader keeps in
    meta["exam_stats"] (exam, score_max, score_avg, score_median, score_standard_deviation, ...)."""
    rows = {it.exam: dict(it.meta["exam_stats"]) for it in items if "exam_stats" in it.meta}
    if not rows:
        raise ValueError(f"items {items.name!r} carry no student statistics (meta['exam_stats'])")
    return pd.DataFrame([{**v, "exam": k} for k, v in rows.items()]).drop(columns="exam_id", errors="ignore")
