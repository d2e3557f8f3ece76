"""Maximum a posteriori (MAP) theta under a normal prior: always finite."""
from __future__ import annotations

from numpy.typing import ArrayLike

from mcqa_toolkit.irt.ability.base import DEFAULT_CHUNK, AbilityEstimate
from mcqa_toolkit.irt.ability.solve import solve


def ability_map(responses: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                D: float = 1.0, prior_mean: float = 0.0, prior_sd: float = 1.0,
                bounds: tuple[float, float] = (-6.0, 6.0), chunk_size: int = DEFAULT_CHUNK) -> AbilityEstimate:
    """Posterior mode with a N(prior_mean, prior_sd^2) prior, searched in bounds: theta, psd (n,).

    Always finite; a person with no administered item gets prior_mean.
    """
    return solve(responses, a, b, c, D, bounds, "map", prior_mean, prior_sd, chunk_size)
