"""Logistic-regression DIF (uniform and non-uniform). Same inputs and `DifResult` as every DIF method
(measure.dif.base: persons x items 0/1, one group label per person, MIN_GROUP persons per group at least).

Logistic regression (Swaminathan & Rogers 1990; R^2 change after Zumbo 1999): per item three nested models of
P(right): M0 = matching score X (+ block dummies with `within`), M1 = M0 + group G, M2 = M1 + X G, fitted by
statsmodels (GLM, binomial, IRLS: the same maximum likelihood as Logit, whose Newton step inverts the Hessian and
fails when a block answers an item always right or always wrong). Likelihood-ratio tests: uniform DIF M1 vs M0
and non-uniform DIF M2 vs M1 (1 df each), DIF overall M2 vs M0 (2 df, `p_value`). Effect size: the change in
Nagelkerke R^2 from M0 to M2, classed by the 2-df test at `alpha` and the thresholds of Jodoin & Gierl (2001,
Applied Measurement in Education 14(4)): negligible (A) below 0.035, moderate (B) 0.035 to 0.070, large (C) from
0.070; `effect_size="zumbo-thomas"` uses Zumbo & Thomas's (1997) 0.13 and 0.26 instead. X is the total score
(studied item included; with `anchor`, the anchor items' score plus the studied item), centred, which spans the
same models. The fits are a loop over items: statsmodels fits one model at a time. When a group, block or score
separates the answers the ML estimate is at infinity; the likelihood ratio reported is then its limit and the
note says so.
"""
from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps
from statsmodels.genmod.families import Binomial
from statsmodels.genmod.generalized_linear_model import GLM

from mcqa_toolkit.measure.dif.base import MIN_GROUP, DifResult, block_codes, check_groups, with_bh

__all__ = ["EFFECT_SIZES", "nagelkerke", "logistic_dif"]

EFFECT_SIZES = {"jodoin-gierl": (0.035, 0.070), "zumbo-thomas": (0.13, 0.26)}   # Nagelkerke R^2 change: B, C from


def nagelkerke(llf: ArrayLike, llnull: ArrayLike, n: int) -> np.ndarray:
    """Nagelkerke R^2 = (1 - exp(2 (llnull - llf) / n)) / (1 - exp(2 llnull / n))."""
    llf, llnull = np.asarray(llf, dtype=float), np.asarray(llnull, dtype=float)
    return -np.expm1(2 * (llnull - llf) / n) / -np.expm1(2 * llnull / n)


def _fit(y: np.ndarray, x: np.ndarray) -> tuple[float, float, bool]:
    """(log-likelihood, intercept-only log-likelihood, finite) of a logistic regression; finite is False when IRLS
    did not converge or put a probability within 1e-8 of 0 or 1 (separation: the estimate is at infinity)."""
    with warnings.catch_warnings(), np.errstate(over="ignore"):   # llf and llnull are computed lazily: inside
        warnings.simplefilter("ignore")       # separation: statsmodels warns and stops at its iteration cap
        fit = GLM(y, x, family=Binomial()).fit(maxiter=200)
        mu = fit.fittedvalues
        finite = bool(fit.converged) and bool(((mu > 1e-8) & (mu < 1 - 1e-8)).all())
        return float(fit.llf), float(fit.llnull), finite


def logistic_dif(responses: pd.DataFrame, group: ArrayLike, focal: Hashable, reference: Hashable,
                 matching: ArrayLike | None = None, *, anchor: Sequence[str] | None = None,
                 within: ArrayLike | None = None,
                 effect_size: str = "jodoin-gierl", alpha: float = 0.05, min_group: int = MIN_GROUP) -> DifResult:
    """Logistic-regression DIF per item (see the module docstring). Table columns: item_id, n_focal, n_reference,
    chi2_uniform, p_uniform, chi2_nonuniform, p_nonuniform, chi2_dif, p_value (2 df), r2_base, delta_r2_uniform,
    delta_r2, effect (A/B/C), p_bh, flag_bh, note. matching: one score per person (default: total score);
    anchor: item ids whose number right, plus the studied item, is the score (e.g. `mantel_haenszel(...,
    purify=True).anchor`, so DIF items do not contaminate it); within: one block label per person (e.g. the
    model), entered as fixed effects in every model."""
    if effect_size not in EFFECT_SIZES:
        raise ValueError(f"effect_size {effect_size!r}: expected one of {sorted(EFFECT_SIZES)}")
    u, is_f, items, kept = check_groups(responses, group, focal, reference, min_group)
    n = u.shape[0]
    if matching is not None and anchor is not None:
        raise ValueError("give matching or anchor, not both")
    used = np.ones(len(items), dtype=bool) if anchor is None else np.isin(items, [str(i) for i in anchor])
    if matching is None:
        x = (u @ used.astype(float))[:, None] + u * (~used)[None, :]          # (n, items): studied item included
    else:
        used[:] = False                                                      # an external criterion: no anchor
        x = np.broadcast_to(np.asarray(matching, dtype=float)[kept][:, None], u.shape)
        if not np.isfinite(x).all():
            raise ValueError("matching must be one finite score per person")
    x = x - x.mean(axis=0)
    g = is_f.astype(float)
    blocks = block_codes(within, kept)
    dummies = (blocks[:, None] == np.arange(1, blocks.max() + 1)[None, :]).astype(float)
    ll = np.full((len(items), 3), np.nan)
    ll0 = np.full(len(items), np.nan)
    converged = np.ones(len(items), dtype=bool)
    constant = u.min(axis=0) == u.max(axis=0)
    for i in np.flatnonzero(~constant):
        base = np.column_stack([np.ones(n), x[:, i], dummies])
        designs = (base, np.column_stack([base, g]), np.column_stack([base, g, x[:, i] * g]))
        fits = [_fit(u[:, i], d) for d in designs]
        ll[i] = [f[0] for f in fits]
        ll0[i] = fits[0][1]
        converged[i] = all(f[2] for f in fits)
    chi = 2 * np.maximum(np.diff(ll, axis=1), 0.0)            # M1 - M0, M2 - M1
    chi_all = 2 * np.maximum(ll[:, 2] - ll[:, 0], 0.0)
    r2 = nagelkerke(ll, ll0[:, None], n)
    p_all = sps.chi2.sf(chi_all, 2)
    lo, hi = EFFECT_SIZES[effect_size]
    d_r2 = r2[:, 2] - r2[:, 0]
    significant = np.nan_to_num(p_all, nan=1.0) < alpha
    effect = np.where(~significant | ~(d_r2 >= lo), "A", np.where(d_r2 >= hi, "C", "B"))
    note = np.select([constant, ~converged], [
        "every person right (or every person wrong): no test",
        "separation: the ML estimate is at infinity; the likelihood ratio is its limit"], "")
    table = pd.DataFrame({"item_id": items, "n_focal": int(is_f.sum()), "n_reference": int((~is_f).sum()),
                          "chi2_uniform": chi[:, 0], "p_uniform": sps.chi2.sf(chi[:, 0], 1),
                          "chi2_nonuniform": chi[:, 1], "p_nonuniform": sps.chi2.sf(chi[:, 1], 1),
                          "chi2_dif": chi_all, "p_value": p_all, "r2_base": r2[:, 0],
                          "delta_r2_uniform": r2[:, 1] - r2[:, 0], "delta_r2": d_r2, "effect": effect, "note": note})
    return DifResult(f"logistic ({effect_size})", focal, reference, with_bh(table, alpha),
                     tuple(str(i) for i in np.asarray(items)[used]))
