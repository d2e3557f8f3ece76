"""The exam rule that grades ONE response against its item's key, for every question type (the course-exam
benchmark's rules, which reduce to exact match for the single-answer exams): used by the record factory
(records.factory) when a record is made. It needs nothing but the Item; measure.exam_rules sums the graded
records per exam.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from mcqa_toolkit.items import LETTERS, Item

__all__ = ["RULE_STATUSES", "Judge", "course_exam_points"]

# what course_exam_points returns: the record statuses an exam rule can see (records.columns.STATUSES less refused
# and error, which only the caller knows)
RULE_STATUSES = ("correct", "partial", "incorrect", "unanswered")
Judge = Callable[[Item, str], float]


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
    points), anything else 0; an item with meta["partial_credit"] False (AGIEval's select-all questions, scored
    by exact set match) earns nothing for a strict subset; responses are indices or letters ("A,C"). Items the
    course-exam loader kept as "short" because their options did not parse (meta options_parsed False) are
    scored by these letter rules from meta["question_type"]. short: `judge(item, response)` must return a number
    in [0, item.points]. None, a negative index, "" or an empty collection is unanswered (0 points).
    """
    pts = float(item.points)
    if item.answer is None:
        raise ValueError(f"item {item.item_id} has no key (annulled): it cannot be scored")
    kind = item.answer_type
    if kind == "short" and item.meta.get("options_parsed") is False:
        kind = {"SingleChoice": "single", "MultipleChoice": "multi"}.get(str(item.meta.get("question_type")), kind)
    blank = response is None or (isinstance(response, (str, tuple, list, set, frozenset)) and len(response) == 0)
    if blank or (isinstance(response, (int, np.integer)) and response < 0):
        return 0.0, "unanswered"
    if kind in ("single", "multi"):
        chosen, key = _option_set(response), _option_set(item.answer)
        if chosen == key:
            return pts, "correct"
        partial = kind == "multi" and chosen < key and item.meta.get("partial_credit", True) is not False
        return (min(2.0, pts), "partial") if partial else (0.0, "incorrect")
    if kind == "truefalse":
        if isinstance(item.answer, int):
            raise ValueError(f"item {item.item_id}: a true/false key is a tuple of bools, got {item.answer!r}")
        same = tuple(bool(x) for x in response) == tuple(bool(x) for x in item.answer)
        return (pts, "correct") if same else (0.0, "incorrect")
    if judge is None:
        raise ValueError(f"item {item.item_id} is a short answer: pass judge=callable(item, response) -> 0..points")
    got = judge(item, str(response))
    if isinstance(got, bool) or not isinstance(got, (int, float, np.number)) or not 0 <= float(got) <= pts:
        raise ValueError(f"judge returned {got!r} for item {item.item_id}; expected a number in [0, {pts}]")
    got = float(got)
    return got, "correct" if got == pts else "partial" if got > 0 else "incorrect"
