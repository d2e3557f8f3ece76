"""The record factory: one record per (item, shuffle) with every column of `run.columns`, derived the same way
for the runner and for anything else that makes records (synthetic results in tests, imported results).

Derived fields are never typed by hand: positions come from the permutation, `correct` from the choice and
the key, `option_probs` from the scores (softmax; a NaN score, i.e. no answer or a letter outside an API's
top-k, gets probability 0), `status` from whether there is a choice.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import numpy as np

from mcqa_toolkit.items import Item
from mcqa_toolkit.run.columns import RUN_COLUMNS

__all__ = ["run_fields", "option_probs", "make_record"]


def run_fields(**values: Any) -> dict[str, Any]:
    """The RUN_COLUMNS of a record (run_id, model, dataset, strategy, ...): given values, else ""/0 defaults."""
    unknown = set(values) - set(RUN_COLUMNS)
    if unknown:
        raise ValueError(f"not run columns: {sorted(unknown)}; run columns: {RUN_COLUMNS}")
    defaults = {c: 0 if c in ("shots", "seed") else "" for c in RUN_COLUMNS}
    return {**defaults, **values}


def option_probs(scores: Sequence[float]) -> np.ndarray:
    """Softmax over the options; NaN scores get probability 0; all NaN gives all NaN."""
    s = np.asarray(scores, dtype=float)
    finite = np.where(np.isnan(s), -np.inf, s)
    if not np.isfinite(finite).any():
        return np.full(len(s), np.nan)
    p = np.exp(finite - finite.max())
    return p / p.sum()


def _nan_list(values: np.ndarray) -> list[float | None]:
    return [None if np.isnan(x) else float(x) for x in values]


def make_record(item: Item, run: Mapping[str, Any], *, shuffle: int = 0, permutation: Sequence[int] | None = None,
                choice: int = -1, option_scores: Sequence[float] | None = None, status: str | None = None,
                extraction_rule: str = "", generated_text: str = "", n_prompt_tokens: int = 0,
                n_forwarded_tokens: float = 0, seconds: float = 0.0, extra: Mapping[str, Any] | None = None
                ) -> dict[str, Any]:
    """The record of `item` shown in `permutation` (identity if None) answered with original option `choice`
    (-1: none). `option_scores` default to one-hot on the choice (NaN without one); `status` defaults to
    answered / unanswered; `run` supplies the RUN_COLUMNS (see `run_fields`)."""
    perm = list(range(item.n_options)) if permutation is None else [int(p) for p in permutation]
    if sorted(perm) != list(range(item.n_options)):
        raise ValueError(f"item {item.item_id!r}: permutation {perm} is not a permutation of its options")
    choice = int(choice)
    if not -1 <= choice < item.n_options:
        raise ValueError(f"item {item.item_id!r}: choice {choice} is not an option index (or -1)")
    if option_scores is None:
        scores = np.full(item.n_options, np.nan)
        if choice >= 0:
            scores[:] = 0.0
            scores[choice] = 1.0
    else:
        scores = np.asarray(option_scores, dtype=float)
    answer = item.answer if item.answer_type == "single" and isinstance(item.answer, int) else -1
    return {
        **run_fields(**{k: run[k] for k in RUN_COLUMNS if k in run}),
        "item_id": item.item_id, "parallel_id": item.parallel_id, "language": item.language,
        "subject": item.subject, "exam": item.exam, "year": item.year, "n_options": item.n_options,
        "answer": answer, "shuffle": int(shuffle), "permutation": perm,
        "option_scores": _nan_list(scores), "option_probs": _nan_list(option_probs(scores)),
        "choice": choice, "choice_position": perm.index(choice) if choice >= 0 else -1,
        "correct_position": perm.index(answer) if answer >= 0 else -1,
        "correct": bool(choice >= 0 and choice == answer),
        "status": status or ("answered" if choice >= 0 else "unanswered"),
        "extraction_rule": extraction_rule, "generated_text": generated_text,
        "n_prompt_tokens": int(n_prompt_tokens), "n_forwarded_tokens": int(round(n_forwarded_tokens)),
        "seconds": float(seconds), "extra": json.dumps(dict(extra or {}), default=float),
    }
