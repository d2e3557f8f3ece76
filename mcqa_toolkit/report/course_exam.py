"""The course-exam report's data: every course-exam run under a runs folder with its items and the
students' statistics, the exam scores and the student comparison, and the comparison as the course-exam
benchmark's comparison.json (one entry per system x exam).

The items (and so the student statistics) are the ones the runs were given, read from their run folders
(report.headline.merged_items), whatever course-exam folder they were made on.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.measure.exam_rules import compare_to_students, course_exam_scores, student_statistics
from mcqa_toolkit.report.headline import dataset_runs, merged_items

DATASET = "course_exam"
SYSTEM = ("model", "strategy")


@dataclass(frozen=True)
class CourseExamRuns:
    """The complete course-exam runs of a runs folder, their items and the students' statistics per exam."""

    records: pd.DataFrame
    items: ItemSet

    @property
    def students(self) -> pd.DataFrame:
        return student_statistics(self.items)

    def scores(self, overall: bool = False) -> pd.DataFrame:
        """Points per system x exam (course_exam_scores), with `overall` rows when asked."""
        return course_exam_scores(self.records, by=SYSTEM, overall=overall)

    def comparison(self) -> pd.DataFrame:
        """Per system x exam: points, the score on the exam's scale, z, percentile, and the exam's name."""
        names = self.students.set_index("exam")["test_paper_name"] if "test_paper_name" in self.students else {}
        out = compare_to_students(self.scores(), self.students)
        return out.assign(exam_name=out["exam"].map(lambda e: names.get(e, e)))

    def describe(self) -> str:
        r = self.records
        return (f"{len(r):,} records from {r['run_id'].nunique()} course-exam run(s) of {r['item_id'].nunique()} "
                f"questions in {r['exam'].nunique()} exam(s); items: {self.items.name}")


def load_course_exam_runs(runs_dir: str | Path) -> CourseExamRuns | None:
    """The complete course-exam runs under `runs_dir` (any depth) with the items they were given, or None when
    there is none."""
    runs = dataset_runs(runs_dir, DATASET)
    if not runs:
        return None
    records = pd.concat([rd.load() for rd in runs], ignore_index=True)
    return CourseExamRuns(records.reset_index(drop=True), merged_items(runs, DATASET))


def comparison_json(comparison: pd.DataFrame, scores: pd.DataFrame) -> dict[str, Any]:
    """The course-exam benchmark's comparison.json: per system, per exam the model's points and the students'
    statistics, plus each system's overall points (graded questions only; judge errors counted apart)."""
    out: dict[str, Any] = {}
    for (model, strategy), g in comparison.groupby(list(SYSTEM), sort=True):
        total = scores[(scores["model"] == model) & (scores["strategy"] == strategy) & (scores["exam"] == "overall")]
        exams = {r.exam: {"exam_name": r.exam_name, "points_earned": r.points_earned, "points_graded": r.points_graded,
                          "points_possible": r.points_possible, "n_error": int(r.n_error),
                          "llm_score": r.model_score, "score_max": r.score_max, "student_avg": r.score_avg,
                          "student_median": r.score_median, "student_sd": r.score_standard_deviation,
                          "z": r.z, "percentile": r.percentile, "above_median": bool(r.above_median),
                          "note": r.note} for r in g.itertuples(index=False)}
        overall = total.iloc[0] if len(total) else None
        out[f"{model} / {strategy}"] = {
            "exams": exams,
            "overall": None if overall is None else {k: float(overall[k]) for k in
                                                     ("points_earned", "points_graded", "points_possible", "n_error")}}
    return json.loads(json.dumps(out, default=float))  # numpy numbers -> JSON numbers (NaN stays NaN)


def write_comparison(directory: str | Path, data: dict[str, Any]) -> Path:
    """`<directory>/comparison.json`."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "comparison.json"
    path.write_text(json.dumps(data, indent=2))
    return path
