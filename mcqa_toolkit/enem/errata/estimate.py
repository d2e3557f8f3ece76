"""Estimating one item's 3PL (a, b, c) from candidates' official scores, for items INEP scored with parameters it
never published (`enem.errata.discover` tries this only for items with no published parameters of their own).

The objective is the mean pseudo-Huber loss (quadratic below DELTA = 0.1 point, linear above) of the difference
between the UNROUNDED score k * theta + d (theta: INEP's EAP, with the other items' parameters fixed) and
NU_NOTA, over the candidates who took the item (blank sheets left out): smooth in (a, b, c), unlike the rounded
score, and not pulled by the few candidates who are off for another reason. It is minimised by Nelder-Mead on
(log a, b, logit c) from three starts: the (a, b, c) of the exam-area's published items that fit best (no start
comes from outside the data).
Each evaluation is one (n, 40) array operation: the other items' log-likelihood on the quadrature grid is
computed once.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS, ENEM_GRID
from mcqa_toolkit.irt.ability import posterior_moments
from mcqa_toolkit.irt.models import log_irf

N_STARTS = 3
DELTA = 0.1     # points: below it a score error is rounding; above it the candidate may be off for another reason
METHOD = ("minimises the mean pseudo-Huber loss (quadratic below 0.1 point, linear above) of the difference between "
          "the unrounded score k*theta+d and NU_NOTA over the candidates who took the item (blank sheets left out), "
          "the other items as corrected; Nelder-Mead on (log a, b, logit c) from the three published (a, b, c) of "
          "the exam-area that fit best")


@dataclass(frozen=True)
class Estimate:
    """Estimated (a, b, c), the candidates it was fitted on and the mean loss of the unrounded score there."""

    a: float
    b: float
    c: float
    n_candidates: int
    loss: float


@dataclass(frozen=True)
class FitData:
    """What the objective needs: base (n, G) log posterior without the item, the item's 0/1 response (n,), and
    NU_NOTA (n,), for one area's scale."""

    base: np.ndarray
    u: np.ndarray
    nota: np.ndarray
    area: str

    def subset(self, keep: np.ndarray) -> FitData:
        return FitData(self.base[keep], self.u[keep], self.nota[keep], self.area)


def grid_loglik(u: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Log prior + log-likelihood on INEP's grid of 0/1 responses u (n, J) to items (a, b, c): (n, G)."""
    points, weights = ENEM_GRID
    log_p, log_q = log_irf(points, a, b, c, 1.0)                  # (G, J)
    return u @ (log_p - log_q).T + log_q.sum(axis=1) + np.log(weights)


def unrounded(data: FitData, abc: np.ndarray) -> np.ndarray:
    """k * theta + d of every candidate for each parameter triple: abc (S, 3) -> (S, n)."""
    points, _ = ENEM_GRID
    k, d = ENEM_CONSTANTS[data.area]
    log_p, log_q = (x.T for x in log_irf(points, abc[:, 0], abc[:, 1], abc[:, 2], 1.0))   # (S, G): S as items
    ll = data.base[None] + np.where(data.u[None, :, None] == 1, log_p[:, None], log_q[:, None])   # (S, n, G)
    theta, _ = posterior_moments(ll.reshape(-1, points.size), points)
    return k * theta.reshape(len(abc), -1) + d


def loss_of(error: np.ndarray) -> np.ndarray:
    """Pseudo-Huber loss of score errors (points): quadratic below DELTA, linear above, so that candidates off for
    another reason (a score INEP changed, an item not modelled) do not pull the fit."""
    return DELTA ** 2 * (np.sqrt(1.0 + (error / DELTA) ** 2) - 1.0)


def _params(x: np.ndarray) -> np.ndarray:
    return np.array([np.exp(x[0]), x[1], 1.0 / (1.0 + np.exp(-x[2]))])


def fit(data: FitData, starts: np.ndarray) -> Estimate:
    """The (a, b, c) minimising the loss of the unrounded score (see the module docstring); starts: the
    candidate (a, b, c) rows (S, 3), of which the N_STARTS best start Nelder-Mead."""
    if data.nota.size == 0:
        raise ValueError("no candidate took the item: nothing to estimate from")
    starts = np.asarray(starts, float)
    first = loss_of(unrounded(data, starts) - data.nota).mean(axis=1)
    best_starts = starts[np.argsort(first)[:N_STARTS]]

    def loss(x: np.ndarray) -> float:
        if not (-6 < x[0] < 3 and -20 < x[1] < 30 and -12 < x[2] < 0):   # a in (0.0025, 20), c < 0.5
            return 1e12
        return float(loss_of(unrounded(data, _params(x)[None]) - data.nota).mean())

    runs = []
    for a, b, c in best_starts:
        x0 = np.array([np.log(a), b, np.log(max(c, 1e-4) / (1 - max(c, 1e-4)))])
        runs.append(minimize(loss, x0, method="Nelder-Mead",
                             options={"xatol": 1e-6, "fatol": 1e-10, "maxiter": 4000, "maxfev": 8000}))
    best = min(runs, key=lambda r: r.fun)
    a, b, c = _params(best.x)
    return Estimate(round(float(a), 4), round(float(b), 4), round(float(c), 4), int(data.nota.size),
                    float(best.fun))
