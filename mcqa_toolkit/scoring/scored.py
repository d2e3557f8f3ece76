"""What every scoring method returns per prompt (one item x shuffle), in ORIGINAL option order."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Scored", "to_original", "argmax_choice"]


@dataclass(frozen=True)
class Scored:
    """A method's output for one prompt (one item x shuffle). `option_scores` are per ORIGINAL option (higher =
    preferred). Single-answer items carry `choice`; the other types carry `response` in original terms (sorted
    option indices, bools, text; None when nothing was read). `status` is answered (to be graded by the record
    factory), unanswered, refused or error; short answers also carry the judges' `points_earned` and
    `judgements`."""

    option_scores: np.ndarray
    choice: int                    # original option index, -1 when unanswered/refused or not single
    status: str = "answered"
    extraction_rule: str = ""
    generated_text: str = ""
    n_prompt_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    response: Any = None           # non-single items: the normalised answer (see records.factory.normalise_response)
    points_earned: float | None = None
    judgements: tuple[dict[str, Any], ...] = ()


def to_original(shown: Sequence[float] | np.ndarray, permutation: Sequence[int]) -> np.ndarray:
    """Reorder per-position values into original option order (permutation[pos] = original index)."""
    out = np.empty(len(permutation), dtype=float)
    out[np.asarray(permutation)] = np.asarray(shown, dtype=float)
    return out


def argmax_choice(scores: np.ndarray) -> int:
    """Highest-scoring original option; -1 if every score is NaN (nothing to choose)."""
    if np.all(np.isnan(scores)):
        return -1
    return int(np.nanargmax(scores))
