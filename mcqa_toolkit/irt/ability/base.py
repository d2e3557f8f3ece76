"""What every ability estimator shares: the result type, the quadrature grid and prior, chunk sizes, and the
posterior moments on a grid.

`responses` is persons x items (a 1-D array is one person) of 0/1 with NaN = not administered; missing
responses are left out of that person's likelihood. Every estimator returns an `AbilityEstimate`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

DEFAULT_CHUNK = 4096  # persons per chunk: a chunk's n x items and n x grid blocks stay in L2 cache


@dataclass(frozen=True)
class AbilityEstimate:
    """theta (n,) and psd (n,) per person, and the method that produced them.

    psd is the posterior SD for EAP; for MAP the normal-approximation posterior SD
    1/sqrt(I(theta) + 1/sigma^2); for ML and WLE the asymptotic SE 1/sqrt(I(theta)) (inf at +-inf).
    For `ability_eap_sum_score`, row k is the sum score k.
    """

    theta: np.ndarray
    psd: np.ndarray
    method: str

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"theta": self.theta, "psd": self.psd})
        df.attrs["method"] = self.method
        return df


def normal_grid(n_points: int = 40, lo: float = -4.0, hi: float = 4.0, mean: float = 0.0,
                sd: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Equally spaced points on [lo, hi] and N(mean, sd) weights normalised over them: (G,), (G,).

    The default (40 points on [-4, 4]) is INEP's ENEM grid; mirt uses 121 points on [-6, 6].
    """
    if n_points < 2 or not lo < hi or not sd > 0:
        raise ValueError(f"normal_grid needs n_points >= 2, lo < hi and sd > 0, got {n_points}, {lo}, {hi}, {sd}")
    points = np.linspace(lo, hi, n_points)
    w = np.exp(-0.5 * ((points - mean) / sd) ** 2)
    return points, w / w.sum()


def check_grid(grid: ArrayLike | None, prior: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
    """Grid points (G,) and prior weights normalised to sum 1 (G,); the default grid when grid is None."""
    if grid is None:
        if prior is not None:
            raise ValueError("prior was given without grid: pass the grid points the weights belong to")
        return normal_grid()
    points = np.asarray(grid, dtype=float)
    if points.ndim != 1 or points.size < 2 or not np.isfinite(points).all():
        raise ValueError(f"grid must be a 1-D array of >= 2 finite points, got shape {points.shape}")
    if prior is None:
        w = np.exp(-0.5 * points ** 2)
    else:
        w = np.asarray(prior, dtype=float)
        if w.shape != points.shape:
            raise ValueError(f"prior has shape {w.shape} but grid has {points.shape}")
        if not (np.isfinite(w).all() and (w >= 0).all() and w.sum() > 0):
            i = int(np.argmax(~np.isfinite(w) | (w < 0))) if (~np.isfinite(w) | (w < 0)).any() else 0
            raise ValueError(f"prior[{i}] = {w[i]}: prior weights must be finite, >= 0 and not all 0")
    return points, w / w.sum()


def check_chunk(chunk_size: int) -> int:
    """chunk_size as an int >= 1 (persons per chunk)."""
    if int(chunk_size) < 1:
        raise ValueError(f"chunk_size = {chunk_size}: must be >= 1")
    return int(chunk_size)


def posterior_moments(log_post: np.ndarray, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and SD from unnormalised log posteriors on the grid: (m, G), (G,) -> (m,), (m,).

    Overwrites log_post. Row-wise sums, not a matrix product: BLAS rounds a 1-row product differently
    from an n-row one, and the CAT needs one examinee's numbers to be the same alone or in a batch.
    """
    log_post -= log_post.max(axis=1, keepdims=True)
    np.exp(log_post, out=log_post)
    mass = log_post.sum(axis=1)
    t = (log_post * points).sum(axis=1) / mass
    var = (log_post * points * points).sum(axis=1) / mass - t * t
    return t, np.sqrt(np.maximum(var, 0.0))
