"""IRT DIF with item parameters fixed by a human calibration (e.g. INEP's ENEM 3PL parameters). Same inputs and
`DifResult` as every DIF method (measure.dif.base).

IRT test with fixed parameters ("residual difference at matched theta"): each person's theta is the EAP on the
human-calibrated items (`params` a, b, c; `anchor` items, default all) leaving out the studied item, so the item
does not match on itself; per group, the mean residual r_g = mean(u - P_i(theta)) and its variance
sum P (1 - P) / n_g^2; z = (r_F - r_R) / sqrt(V_F + V_R), two-sided normal p. residual_diff > 0: the item is
relatively easier for the focal group than the humans' curve predicts for the reference group at the same theta.
Why this test rather than Lord's (1980) Wald test of group-wise parameter estimates: Lord's test needs the item's
parameters and their covariance estimated in each group, which a few dozen response patterns per language cannot
give (a 3PL calibration wants a thousand persons, measure.population.MIN_PERSONS), and re-estimating them would
discard the human calibration that gives the scale its meaning. With the parameters fixed the only estimated
quantity is theta, and comparing observed minus expected answers between groups at matched theta is the IRT
counterpart of the standardization index (Dorans & Kulick 1986), the model's curve replacing the reference
group's observed proportions. The variance treats theta as known; measure.dif.permutation's `mh_permutation`
gives exact p-values.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps

from mcqa_toolkit import irt
from mcqa_toolkit.irt.models import log_irf
from mcqa_toolkit.measure.dif.base import MIN_GROUP, DifResult, check_groups, with_bh

__all__ = ["loo_eap", "irt_dif"]


def loo_eap(u: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, anchor: np.ndarray, D: float = 1.0,
            grid: int | ArrayLike = 40) -> np.ndarray:
    """EAP theta (n, items) of every person without each studied item: the anchor items' log-likelihood on the
    quadrature grid minus the studied item's own term, N(0, 1) prior (grid: n points on [-4, 4] or the points)."""
    points = irt.normal_grid(int(np.asarray(grid)))[0] if np.ndim(grid) == 0 else np.asarray(grid, dtype=float)
    log_prior = -0.5 * points ** 2
    log_p, log_q = log_irf(points, a, b, c, D)                                     # (G, items)
    ell = u[:, :, None] * log_p.T[None] + (1 - u)[:, :, None] * log_q.T[None]      # (n, items, G)
    ell *= anchor[None, :, None]
    post = ell.sum(axis=1)[:, None, :] - ell + log_prior                          # leave the studied item out
    post -= post.max(axis=2, keepdims=True)
    np.exp(post, out=post)
    return (post * points).sum(axis=2) / post.sum(axis=2)


def irt_dif(responses: pd.DataFrame, group: ArrayLike, focal: Hashable, reference: Hashable,
            params: pd.DataFrame, *, anchor: Sequence[str] | None = None, D: float = 1.0,
            grid: int | ArrayLike = 40, alpha: float = 0.05, min_group: int = MIN_GROUP) -> DifResult:
    """IRT residual-difference DIF with fixed item parameters (see the module docstring). params: a, b, c indexed
    by item id (e.g. `measure.item_parameters(items)`), one row for every item of `responses`. Table columns:
    item_id, n_focal, n_reference, residual_focal, residual_reference, residual_diff, se, z, p_value, p_bh,
    flag_bh, note."""
    u, is_f, items, _ = check_groups(responses, group, focal, reference, min_group)
    missing = [i for i in items if i not in params.index.astype(str)]
    if missing:
        raise ValueError(f"{len(missing)} item(s) have no IRT parameters, e.g. {missing[:3]}")
    p = params.set_axis(params.index.astype(str)).loc[items]
    a, b, c, D = irt.check_items(p["a"].to_numpy(float), p["b"].to_numpy(float), p["c"].to_numpy(float), D)
    used = np.ones(len(items), dtype=bool) if anchor is None else np.isin(items, [str(i) for i in anchor])
    if used.sum() < 2:
        raise ValueError("the anchor needs at least 2 items of `responses` (theta leaves the studied item out)")
    theta = loo_eap(u, a, b, c, used, D, grid)
    prob = c + (1 - c) / (1 + np.exp(-D * a * (theta - b)))
    resid, var = u - prob, prob * (1 - prob)
    n_f, n_r = int(is_f.sum()), int((~is_f).sum())
    r_f, r_r = resid[is_f].mean(axis=0), resid[~is_f].mean(axis=0)
    se = np.sqrt(var[is_f].sum(axis=0) / n_f ** 2 + var[~is_f].sum(axis=0) / n_r ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, (r_f - r_r) / se, np.nan)
    table = pd.DataFrame({"item_id": items, "n_focal": n_f, "n_reference": n_r, "residual_focal": r_f,
                          "residual_reference": r_r, "residual_diff": r_f - r_r, "se": se, "z": z,
                          "p_value": 2 * sps.norm.sf(np.abs(z)),
                          "note": np.where(se > 0, "", "the curve gives P = 0 or 1 for everyone: no test")})
    return DifResult("irt residual difference", focal, reference, with_bh(table, alpha),
                     tuple(str(i) for i in np.asarray(items)[used]))
