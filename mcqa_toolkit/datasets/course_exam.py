"""MIT course exams (course-exam benchmark): `questions.jsonl` + `exams_metadata.json` with student statistics.

Question types and how they become Items:
  SingleChoice          -> "single": options parsed from the problem's lines "A. text" / "A) text"
                           (the last run of consecutive letters from A); the stem is the problem without them.
  MultipleChoice        -> "multi": same parsing; answer "A,B,D" -> (0, 1, 3).
  True/False Questions  -> "truefalse": answer "True,False" -> (True, False); options are ("True", "False"),
                           the choice offered for every statement; the statements ("True / False : ...")
                           stay in the stem and are also listed in meta["statements"] when they parse.
  ShortAnswerQuestion   -> "short": answer is the reference text (graded 0..points by a judge).
When the options of a Single/MultipleChoice problem cannot be parsed (fewer than two, or the key names a
letter beyond them), the item is kept as "short" with the problem text as stem and the letter key as
answer ("C", "A,B,D"); meta["question_type"] still says the original type and meta["options_parsed"] is
False, so scorers can apply exact letter matching; meta["option_letters"] holds the letters such a problem
shows inline ("A. Thames B. Nile" -> "AB"), extended to the key's highest letter, so it can still be asked as
a choice question. Each item carries its exam's student statistics in
meta["exam_stats"]; `exam_statistics(path)` returns them as a table.
A record that cannot be used is left out and named with one warning (strict=True refuses it; datasets.common): a
question with no problem text, an unknown type or exam, points that are not a positive number, an answer that does
not fit its type, a field missing or malformed, a repeated instance_id; an exam entry of exams_metadata.json with a
statistic that is not a number or a repeated exam_id (its questions are then left out too: their exam is unknown).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mcqa_toolkit.datasets.common import (
    UniqueIds,
    items_from_records,
    parse_float,
    parse_records,
    question_text,
    reports_skipped,
    require,
    require_text,
)
from mcqa_toolkit.datasets.labels import answer_letters
from mcqa_toolkit.items import LETTERS, Answer, DatasetError, Item, ItemSet, SkippedRecord
from mcqa_toolkit.resources import demo_dir
from mcqa_toolkit.textfiles import jsonl_file_entries, read_json

TYPES = {"SingleChoice": "single", "MultipleChoice": "multi", "True/False Questions": "truefalse",
         "ShortAnswerQuestion": "short"}
STAT_FIELDS = ("score_total", "score_max", "score_avg", "score_median", "score_standard_deviation")
_OPTION_LINE = re.compile(r"^\s*([A-J])[.)]\s+(\S.*?)\s*$")
_INLINE_LETTER = re.compile(r"(?<![A-Za-z0-9])\(?([A-J])[.)]\s")
_STATEMENT_LINE = re.compile(r"^\s*True\s*/\s*False\s*:?\s*(\S.*?)\s*$", re.IGNORECASE)


def read_exams(path: str | Path, strict: bool = False) -> tuple[dict[str, dict[str, Any]], list[SkippedRecord]]:
    """(exam_id -> validated metadata dict, the exam entries left out) from `<dir>/exams_metadata.json`."""
    meta_path = Path(path) / "exams_metadata.json"
    data = read_json(meta_path)
    exams = data.get("exams") if isinstance(data, dict) else None
    if not isinstance(exams, list):
        raise DatasetError(meta_path, "-", "exams", 'expected {"exams": [...]}')
    entries = ((n, ex if isinstance(ex, dict) else DatasetError(meta_path, n, None, "expected a JSON object, got "
                                                                f"{type(ex).__name__}"))
               for n, ex in enumerate(exams, 1))
    pairs, skipped = parse_records(entries, lambda ex, n: _exam(ex, n, meta_path), meta_path,
                                   UniqueIds(meta_path, "exam_id"), "exam_id", strict, key=lambda ex: ex["exam_id"])
    return {ex["exam_id"]: ex for _, ex in pairs}, skipped


def _exam(ex: Mapping[str, Any], n: int, meta_path: Path) -> dict[str, Any]:
    rec = {**ex, "exam_id": require_text(ex, "exam_id", meta_path, n)}
    for key in STAT_FIELDS + ("num_questions", "year"):
        rec[key] = parse_float(require(ex, key, meta_path, n, types=(int, float, str)), meta_path, n, key)
    rec["year"], rec["num_questions"] = int(rec["year"]), int(rec["num_questions"])
    return rec


def parse_options(problem: str) -> tuple[str, tuple[str, ...]]:
    """(stem without the option lines, options) from the last run of lines 'A. ..', 'B. ..', ...; () if none."""
    lines = problem.splitlines()
    runs: list[list[tuple[int, str]]] = []
    run: list[tuple[int, str]] = []
    for i, line in enumerate(lines):
        if not line.strip():  # blank lines may separate options
            continue
        m = _OPTION_LINE.match(line)
        if m and LETTERS.index(m[1]) == len(run):
            run.append((i, m[2]))
        else:
            if len(run) >= 2:
                runs.append(run)
            run = [(i, m[2])] if m and m[1] == "A" else []
    if len(run) >= 2:
        runs.append(run)
    if not runs:
        return problem.strip(), ()
    drop = {i for i, _ in runs[-1]}
    stem = "\n".join(line for i, line in enumerate(lines) if i not in drop).strip()
    return stem, tuple(text for _, text in runs[-1])


def inline_letters(problem: str, key_max: int) -> str:
    """Option letters shown inline ("A. x B. y", "(A) x"): consecutive from A in order of appearance, extended
    to the key's highest letter (index `key_max`), which the exam must show."""
    found = ""
    for m in _INLINE_LETTER.finditer(problem):
        if LETTERS.index(m[1]) == len(found):
            found += m[1]
    return LETTERS[: max(len(found), key_max + 1)]


def parse_record(rec: Mapping[str, Any], n: int, path: Any, exams: Mapping[str, Mapping[str, Any]]) -> Item:
    """One questions.jsonl record -> Item (see the module docstring for the type mapping)."""
    instance_id = require(rec, "instance_id", path, n, types=(int, str))
    exam_id = require_text(rec, "exam_id", path, n)
    if exam_id not in exams:
        raise DatasetError(path, n, "exam_id", f"exam {exam_id!r} not in exams_metadata.json")
    qtype = require_text(rec, "type", path, n)
    if qtype not in TYPES:
        raise DatasetError(path, n, "type", f"unknown question type {qtype!r}; expected one of {list(TYPES)}")
    points = parse_float(require(rec, "points", path, n, types=(int, float, str)), path, n, "points")
    if points <= 0:
        raise DatasetError(path, n, "points", f"points must be > 0, got {points}")
    problem = question_text(rec, "problem", path, n, f"course-{instance_id}")
    raw = require_text(rec, "answer", path, n)
    answer_type, stem = TYPES[qtype], problem
    options: tuple[str, ...] = ()
    answer: Answer = raw
    meta: dict[str, Any] = {"instance_id": instance_id, "question_type": qtype, "exam_stats": dict(exams[exam_id]),
                            "problem_num": rec.get("problem_num"), "explanation": rec.get("explanation") or ""}
    if answer_type in ("single", "multi"):
        letters = answer_letters(raw, len(LETTERS), path, n, "answer")   # checked against the options below
        if answer_type == "single" and len(letters) != 1:
            raise DatasetError(path, n, "answer", f"SingleChoice needs one letter, got {raw!r}")
        stem, options = parse_options(problem)
        meta["options_parsed"] = len(options) >= 2 and max(letters) < len(options)
        if meta["options_parsed"]:
            answer = letters[0] if answer_type == "single" else tuple(letters)
        else:
            answer_type, stem, options = "short", problem, ()
            meta["option_letters"] = inline_letters(problem, max(letters))
    elif answer_type == "truefalse":
        values = [v.strip().lower() for v in raw.split(",")]
        if any(v not in ("true", "false") for v in values):
            raise DatasetError(path, n, "answer", f"expected comma-separated True/False, got {raw!r}")
        answer, options = tuple(v == "true" for v in values), ("True", "False")
        statements = [m[1] for m in map(_STATEMENT_LINE.match, problem.splitlines()) if m]
        if len(statements) == len(answer):
            meta["statements"] = statements
    exam = exams[exam_id]
    return Item(
        item_id=f"course-{instance_id}", source="course_exam", exam=exam_id, stem=stem, options=options,
        answer=answer, answer_type=answer_type, year=exam["year"], subject=str(exam.get("course") or ""),
        language="en", points=points, meta=meta,
    )


@reports_skipped
def load_course_exam(path: str | Path | None = None, strict: bool = False) -> ItemSet:
    """Load `<path>/questions.jsonl` linked to `<path>/exams_metadata.json`; without a path, the small demo course
    exam shipped with the package (data/demo/course_exam: invented questions and student statistics). A question
    that cannot be used is left out and named with one warning (strict=True: refused; the module docstring)."""
    path = Path(path) if path is not None else demo_dir() / "course_exam"
    exams, left_out = read_exams(path, strict)
    qpath = path / "questions.jsonl"
    items = items_from_records(jsonl_file_entries(qpath), lambda rec, n: parse_record(rec, n, qpath, exams), qpath,
                               name=f"course_exam:{path.name}", id_field="instance_id", strict=strict)
    return ItemSet(items, items.name, left_out + list(items.skipped))


def exam_statistics(path: str | Path) -> pd.DataFrame:
    """One row per exam: the metadata's student statistics plus the questions and points found in questions.jsonl."""
    exams = read_exams(path)[0]
    items = load_course_exam(path)
    df = pd.DataFrame(list(exams.values()))
    found = pd.DataFrame([(it.exam, it.points) for it in items], columns=["exam_id", "points"])
    agg = found.groupby("exam_id")["points"].agg(n_items="size", points_in_file="sum")
    df = df.merge(agg, left_on="exam_id", right_index=True, how="left")
    df[["n_items", "points_in_file"]] = df[["n_items", "points_in_file"]].fillna(0)
    df["n_items"] = df["n_items"].astype(int)
    return df
