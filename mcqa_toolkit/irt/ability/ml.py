"""Maximum likelihood (ML) theta, with the infinities of all-correct and all-wrong patterns."""
from __future__ import annotations

from numpy.typing import ArrayLike

from mcqa_toolkit.irt.ability.base import DEFAULT_CHUNK, AbilityEstimate
from mcqa_toolkit.irt.ability.solve import solve


def ability_ml(responses: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
               D: float = 1.0, bounds: tuple[float, float] = (-6.0, 6.0),
               chunk_size: int = DEFAULT_CHUNK) -> AbilityEstimate:
    """Maximum likelihood theta and SE 1/sqrt(I): (n,), (n,).

    All-correct patterns return theta = +inf and all-wrong -inf (SE inf): their likelihood has no
    maximum. Other patterns are searched in `bounds`; a bound is returned if the likelihood keeps
    rising towards it (possible under the 3PL). A person with no administered item raises ValueError.
    """
    return solve(responses, a, b, c, D, bounds, "ml", chunk_size=chunk_size)
