"""Seeded response simulation: `simulate_3pl` draws 0/1 answers from the 3PL for given abilities.

The random generator is passed in (no global state), so a simulated population is reproducible from
its seed; rows are drawn in chunks, which gives the same numbers as one draw of the whole matrix.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from mcqa_toolkit.irt.models import check_items, check_theta, irf

_CHUNK = 65536  # rows per draw: bounds the float64 probability block to ~24 MB at 45 items


def simulate_3pl(theta: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None,
                 rng: np.random.Generator, D: float = 1.0) -> np.ndarray:
    """Responses (n, items) uint8: 1 with probability P_i(theta_j), for theta (n,) and items (items,).

    c = None simulates the 2PL. `rng` must be a numpy Generator (e.g. np.random.default_rng(seed)).
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    a, b, c, D = check_items(a, b, c, D)
    t = np.atleast_1d(check_theta(theta))
    if t.ndim != 1:
        raise ValueError(f"theta must be 1-D (persons,), got shape {t.shape}")
    out = np.empty((t.size, b.size), dtype=np.uint8)
    for start in range(0, t.size, _CHUNK):
        stop = min(start + _CHUNK, t.size)
        out[start:stop] = rng.random((stop - start, b.size)) < irf(t[start:stop], a, b, c, D)
    return out
