"""The Min-K%++ detector (Zhang et al. 2024): each token's log-prob standardised by the model's next-token
distribution at its place, then the mean of the k% lowest. The formula is here; the audit's familiarity table
(contamination.familiarity) measures it with a backend that gives whole next-token distributions (a local model);
the detector reads that column."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mcqa_toolkit.scoring.min_k import n_kept

__all__ = ["min_k_plus_plus", "min_k_pp_score"]


def min_k_plus_plus(logprobs: Sequence[float], mean: Sequence[float], var: Sequence[float], k: float = 0.2) -> float:
    """Min-K%++ of one text: each token's log-prob standardised by the mean and variance of log p over the model's
    next-token distribution at its place, (log p(x_t) - mu_t) / sigma_t, and the mean of the k-fraction lowest
    (as many as `scoring.min_k.min_k_prob` keeps). Higher = more familiar (the sign of the paper's score, the
    opposite of `min_k_prob`'s). A place where the model is certain (sigma 0) contributes 0."""
    x, mu, v = (np.asarray(a, dtype=float).ravel() for a in (logprobs, mean, var))
    if not x.size or x.shape != mu.shape or x.shape != v.shape:
        raise ValueError(f"min_k_plus_plus needs equal, non-empty arrays, got {x.size}, {mu.size}, {v.size}")
    if np.isnan(x).any() or np.isnan(mu).any() or (v < 0).any() or np.isnan(v).any():
        raise ValueError("min_k_plus_plus: NaN values or a negative variance")
    sd = np.sqrt(v)
    z = np.divide(x - mu, sd, out=np.zeros_like(x), where=sd > 0)
    return float(np.sort(z)[:n_kept(k, z.size)].mean())


def min_k_pp_score(familiarity: pd.DataFrame) -> pd.Series:
    """Min-K%++ as measured (already higher = more familiar); NaN where the backend could not give it."""
    return familiarity["min_k_pp"].astype(float)
