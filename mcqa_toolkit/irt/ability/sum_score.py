"""EAP theta given only the sum score (Lord-Wingersky recursion), one row per possible score."""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from mcqa_toolkit.irt.ability.base import AbilityEstimate, check_grid
from mcqa_toolkit.irt.models import check_items, log_irf


def ability_eap_sum_score(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, D: float = 1.0,
                          grid: ArrayLike | None = None, prior: ArrayLike | None = None) -> AbilityEstimate:
    """EAP of theta given only the sum score (Lord-Wingersky): theta, psd of shape (n_items + 1,).

    Row k is the posterior given k correct answers out of all n_items.
    """
    a, b, c, D = check_items(a, b, c, D)
    points, w = check_grid(grid, prior)
    log_p, log_q = log_irf(points, a, b, c, D)
    p, q = np.exp(log_p), np.exp(log_q)
    # The recursion adds one item at a time by definition (a polynomial product); it costs
    # O(n_items^2 * G) regardless of the number of persons, each step vectorised over grid and scores.
    dist = np.zeros((points.size, b.size + 1))
    dist[:, 0] = 1.0
    for j in range(b.size):
        dist[:, 1:j + 2] = dist[:, 1:j + 2] * q[:, j:j + 1] + dist[:, 0:j + 1] * p[:, j:j + 1]
        dist[:, 0] *= q[:, j]
    post = dist * w[:, None]                                  # (G, J+1)
    mass = post.sum(axis=0)
    theta = points @ post / mass
    var = (points ** 2) @ post / mass - theta ** 2
    return AbilityEstimate(theta, np.sqrt(np.maximum(var, 0.0)), "eap_sum_score")
