"""Warm's weighted likelihood (WLE) theta: finite for all-correct and all-wrong 1PL/2PL patterns."""
from __future__ import annotations

from numpy.typing import ArrayLike

from mcqa_toolkit.irt.ability.base import DEFAULT_CHUNK, AbilityEstimate
from mcqa_toolkit.irt.ability.solve import solve


def ability_wle(responses: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                D: float = 1.0, bounds: tuple[float, float] = (-6.0, 6.0),
                chunk_size: int = DEFAULT_CHUNK) -> AbilityEstimate:
    """Warm's weighted likelihood theta (root of score + J/(2I)) and SE 1/sqrt(I): (n,), (n,).

    Finite for all-correct/all-wrong 1PL/2PL patterns; under the 3PL an all-wrong pattern may reach the
    lower bound. A person with no administered item raises ValueError.
    """
    return solve(responses, a, b, c, D, bounds, "wle", chunk_size=chunk_size)
