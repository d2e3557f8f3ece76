"""The record factory: one record per (item, shuffle) with every column of `records.columns`, for every question
type, derived the same way for the runner and for anything else that makes records (synthetic results in
tests, imported results).

Derived fields are never typed by hand: positions come from the permutation, `option_probs` from the scores
(softmax; a NaN score, i.e. no answer or a letter outside an API's top-k, gets probability 0), and
`points_earned` / `status` / `correct` from the response graded by the exam rule of
`records.grading.course_exam_points` (single and true/false exact, multi partial credit, short answers by
the judge's points). Only `refused` and `error` are ever given from outside, since no rule can see them.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mcqa_toolkit.items import Item
from mcqa_toolkit.records.columns import ANSWERED, RUN_COLUMNS, STATUSES
from mcqa_toolkit.records.grading import course_exam_points

__all__ = ["run_fields", "option_probs", "make_record", "normalise_response", "decode_response", "UNSET"]

UNSET: Any = object()  # "derive the response from `choice`" (None is a real value: nothing was read)


def run_fields(**values: Any) -> dict[str, Any]:
    """The RUN_COLUMNS of a record (run_id, model, dataset, strategy, ...): given values, else ""/0 defaults."""
    unknown = set(values) - set(RUN_COLUMNS)
    if unknown:
        raise ValueError(f"not run columns: {sorted(unknown)}; run columns: {RUN_COLUMNS}")
    defaults = {c: 0 if c in ("shots", "seed") else "" for c in RUN_COLUMNS}
    return {**defaults, **values}


Scores = Sequence[float] | np.ndarray  # one score per option


def option_probs(scores: Scores) -> np.ndarray:
    """Softmax over the options; NaN scores get probability 0; all NaN gives all NaN."""
    s = np.asarray(scores, dtype=float)
    finite = np.where(np.isnan(s), -np.inf, s)
    if not np.isfinite(finite).any():
        return np.full(len(s), np.nan)
    p = np.exp(finite - finite.max())
    return p / p.sum()


def _nan_list(values: np.ndarray) -> list[float | None]:
    return [None if np.isnan(x) else float(x) for x in values]


def normalise_response(item: Item, response: Any) -> Any:
    """The response in its JSON-ready normal form for the item's type: int (single), sorted list of distinct
    original indices (multi), list of bools (truefalse), str (short); None when nothing was read.
    Letter-keyed short items (options not parsed, meta question_type Single/MultipleChoice) take indices too."""
    if response is None:
        return None
    kind = item.answer_type
    if kind == "short" and item.meta.get("options_parsed") is False and not isinstance(response, str):
        kind = "multi"
    if kind == "single":
        if isinstance(response, bool) or not isinstance(response, (int, np.integer)):
            raise ValueError(f"item {item.item_id!r}: a single-answer response is an option index, got {response!r}")
        return int(response)
    if kind == "multi":
        if isinstance(response, (str, bytes)) or not all(isinstance(x, (int, np.integer)) for x in response):
            raise ValueError(f"item {item.item_id!r}: a multi-answer response is a collection of option indices, "
                             f"got {response!r}")
        return sorted({int(x) for x in response})
    if kind == "truefalse":
        if isinstance(response, (str, bytes)) or not all(isinstance(x, (bool, np.bool_)) for x in response):
            raise ValueError(f"item {item.item_id!r}: a true/false response is a sequence of bools, got {response!r}")
        return [bool(x) for x in response]
    if not isinstance(response, str):
        raise ValueError(f"item {item.item_id!r}: a short-answer response is text, got {response!r}")
    return response


def decode_response(text: str) -> Any:
    """The `response` column's JSON back to Python (int, list of ints, list of bools, str, or None)."""
    return json.loads(text)


def _grade(item: Item, response: Any, status: str | None, points: float | None) -> tuple[float, float, str]:
    """(points_earned, points_possible, status) for a normalised response."""
    possible = float(item.points)
    if status is not None and status not in STATUSES:
        raise ValueError(f"item {item.item_id!r}: status {status!r} not in {STATUSES}")
    if status in ("refused", "unanswered"):
        return 0.0, possible, status
    if status == "error":
        return math.nan, possible, status
    if status in ANSWERED:
        raise ValueError(f"item {item.item_id!r}: status {status!r} is derived from the response, not given")
    if item.answer is None:  # annulled: nobody can earn its points
        return 0.0, 0.0, "unanswered" if response is None else "incorrect"
    judged = item.answer_type == "short" and item.meta.get("options_parsed") is not False
    if judged and response is not None and points is None:
        raise ValueError(f"item {item.item_id!r}: a short answer needs the judge's points_earned (or status='error')")
    if not judged and points is not None:
        raise ValueError(f"item {item.item_id!r}: points_earned is derived for {item.answer_type!r} items")
    # a judged response comes with its points (checked above); a blank one is never judged
    earned, outcome = course_exam_points(item, response,
                                         judge=(lambda it, r: points) if judged and points is not None else None)
    return earned, possible, outcome


def make_record(item: Item, run: Mapping[str, Any], *, shuffle: int = 0, permutation: Sequence[int] | None = None,
                choice: int = -1, response: Any = UNSET, option_scores: Scores | None = None,
                status: str | None = None, points_earned: float | None = None,
                judgements: Sequence[Mapping[str, Any]] = (), extraction_rule: str = "", generated_text: str = "",
                n_prompt_tokens: int = 0, n_forwarded_tokens: float = 0, seconds: float = 0.0,
                extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The record of `item` shown in `permutation` (identity if None).

    single: answered with original option `choice` (-1: none); `response` defaults to it. Other types pass
    `response` (indices, bools or text; None when nothing was read) and leave `choice` at -1. A short answer
    also passes the judge's `points_earned` (0..points) and its `judgements`, or status='error' when the
    judge's verdict could not be read. `status` is given only as refused / unanswered / error; otherwise it is
    graded. `option_scores` default to one-hot on the choice (NaN without one); `run` supplies the RUN_COLUMNS
    (see `run_fields`)."""
    perm = list(range(item.n_options)) if permutation is None else [int(p) for p in permutation]
    if sorted(perm) != list(range(item.n_options)):
        raise ValueError(f"item {item.item_id!r}: permutation {perm} is not a permutation of its options")
    choice = int(choice)
    if not -1 <= choice < item.n_options or (choice >= 0 and item.answer_type != "single"):
        raise ValueError(f"item {item.item_id!r}: choice {choice} is not a single-answer option index (or -1)")
    if response is UNSET:
        if item.answer_type != "single":
            raise ValueError(f"item {item.item_id!r} is {item.answer_type!r}: pass its response")
        response = choice if choice >= 0 else None
    response = normalise_response(item, response)
    if item.answer_type == "single" and (response if response is not None else -1) != choice:
        raise ValueError(f"item {item.item_id!r}: response {response!r} and choice {choice} disagree")
    if option_scores is None:
        scores = np.full(item.n_options, np.nan)
        if choice >= 0:
            scores[:] = 0.0
            scores[choice] = 1.0
    else:
        scores = np.asarray(option_scores, dtype=float)
    earned, possible, status = _grade(item, response, status, points_earned)
    answer = item.answer if item.answer_type == "single" and isinstance(item.answer, int) else -1
    return {
        **run_fields(**{k: run[k] for k in RUN_COLUMNS if k in run}),
        "item_id": item.item_id, "parallel_id": item.parallel_id, "language": item.exam_language,
        "subject": item.subject, "exam": item.exam, "year": item.year, "answer_type": item.answer_type,
        "n_options": item.n_options, "answer": answer, "shuffle": int(shuffle), "permutation": perm,
        "option_scores": _nan_list(scores), "option_probs": _nan_list(option_probs(scores)),
        "choice": choice, "choice_position": perm.index(choice) if choice >= 0 else -1,
        "correct_position": perm.index(answer) if answer >= 0 else -1,
        "response": json.dumps(response, ensure_ascii=False), "points_earned": earned, "points_possible": possible,
        "correct": status == "correct", "status": status,
        "extraction_rule": extraction_rule, "generated_text": generated_text,
        "judgements": json.dumps(list(judgements), ensure_ascii=False, default=float) if judgements else "",
        "n_prompt_tokens": int(n_prompt_tokens), "n_forwarded_tokens": int(round(n_forwarded_tokens)),
        "seconds": float(seconds), "extra": json.dumps(dict(extra or {}), default=float),
    }
