"""Model-vs-human comparison: percentile among human thetas, per-item residuals, random-guessing baseline.

These answer the paper's questions "where would this model rank among the exam's candidates?",
"which items are harder for the machine than for a human of the same ability?" and "what does pure
guessing score?" (its Table 1: accuracy, theta and l_z of uniform random answers, scored exactly as the
models are). Pure functions: arrays in, arrays or frozen dataclasses out; the rng is passed in.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit.irt.ability import AbilityEstimate, ability_eap
from mcqa_toolkit.irt.fit import _masked, person_fit_lz, proportion_correct
from mcqa_toolkit.irt.models import check_items, check_theta, irf


def percentile_of(theta: ArrayLike, human_theta: ArrayLike) -> np.ndarray:
    """Percent (0-100) of the human sample below each theta, ties counted half: theta.shape.

    human_theta: (n_humans,) finite; theta may be +-inf (0 or 100).
    """
    h = np.asarray(human_theta, dtype=float).ravel()
    if h.size == 0:
        raise ValueError("human_theta is empty")
    if not np.isfinite(h).all():
        i = int(np.argmax(~np.isfinite(h)))
        raise ValueError(f"human_theta[{i}] = {h[i]}: must be finite")
    h = np.sort(h)
    t = check_theta(theta)
    below = np.searchsorted(h, t, side="left")
    not_above = np.searchsorted(h, t, side="right")
    return 100.0 * (below + not_above) / (2.0 * h.size)


def expected_correct(theta: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                     D: float = 1.0) -> np.ndarray:
    """Expected proportion correct per item for a human of ability theta: theta.shape + (items,)."""
    return irf(theta, a, b, c, D)


@dataclass(frozen=True)
class ItemResiduals:
    """Per item (items,): observed proportion correct of the model population, expected proportion for
    humans of the same thetas, and residual = observed - expected (< 0: harder for the machine)."""

    observed: np.ndarray
    expected: np.ndarray
    residual: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"observed": self.observed, "expected": self.expected, "residual": self.residual})
        df.index.name = "item"
        return df


def item_residuals(responses: ArrayLike, theta: ArrayLike, a: ArrayLike, b: ArrayLike,
                   c: ArrayLike | None = None, D: float = 1.0) -> ItemResiduals:
    """Observed vs expected proportion correct per item over the administered responses.

    responses (n, items) of the model runs (e.g. shuffles) and their thetas (n,), finite.
    """
    a, b, c, D = check_items(a, b, c, D)
    x, m = _masked(responses)
    t = np.atleast_1d(check_theta(theta, allow_inf=False))
    if t.shape != (x.shape[0],) or x.shape[1] != b.size:
        raise ValueError(f"responses {x.shape} must be (len(theta) = {t.size}, n_items = {b.size})")
    taken = m.sum(axis=0)
    expected = np.divide((irf(t, a, b, c, D) * m).sum(axis=0), taken,
                         out=np.full(b.shape, np.nan), where=taken > 0)
    observed = proportion_correct(responses)
    return ItemResiduals(observed, expected, observed - expected)


@dataclass(frozen=True)
class GuessingBaseline:
    """Simulated uniform random answering, scored like the models: accuracy, theta, lz, each (n_sims,)."""

    accuracy: np.ndarray
    theta: np.ndarray
    lz: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"accuracy": self.accuracy, "theta": self.theta, "lz": self.lz})

    def summary(self) -> pd.DataFrame:
        """Mean and SD of each column (the paper's Table 1 reports accuracy as a percentage)."""
        return self.to_frame().agg(["mean", "std"])


def random_guessing_baseline(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, *,
                             n_options: ArrayLike = 5, n_sims: int = 1000,
                             rng: np.random.Generator, D: float = 1.0,
                             estimator: Callable[..., AbilityEstimate] = ability_eap) -> GuessingBaseline:
    """Answer every item uniformly at random (correct with probability 1/n_options) n_sims times.

    n_options: scalar or (items,) ints >= 2. Each simulated sheet is scored by `estimator(responses,
    a, b, c, D)` (default EAP) and l_z at that theta, so the baseline goes through the same scoring.
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    a, b, c, D = check_items(a, b, c, D)
    k = np.broadcast_to(np.asarray(n_options), b.shape)
    if not (np.issubdtype(k.dtype, np.number) and (k >= 2).all() and (k % 1 == 0).all()):
        i = int(np.argmax(~((k >= 2) & (k % 1 == 0)))) if np.issubdtype(k.dtype, np.number) else 0
        raise ValueError(f"n_options[{i}] = {k[i]}: must be an integer >= 2")
    if int(n_sims) < 1:
        raise ValueError(f"n_sims = {n_sims}: must be >= 1")
    u = (rng.random((int(n_sims), b.size)) < 1.0 / k).astype(np.uint8)
    est = estimator(u, a, b, c, D)
    return GuessingBaseline(u.mean(axis=1), est.theta, person_fit_lz(u, est.theta, a, b, c, D))
