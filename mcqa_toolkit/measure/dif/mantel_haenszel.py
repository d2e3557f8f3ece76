"""Differential item functioning (DIF): does an item work differently for two groups of persons of the same
ability? Here: Mantel-Haenszel with the ETS A/B/C classes
(its permutation test within blocks is measure.dif.permutation; the input and Benjamini-Hochberg are
measure.dif.base). docs/dif.md explains the choices.

Mantel-Haenszel (Holland & Thayer 1988): per item and stratum k (default: the total score, studied item
included, as Holland & Thayer recommend), A/B = reference right/wrong, C/D = focal right/wrong, N = persons;
alpha_MH = sum(A D / N) / sum(B C / N) (> 1: the reference group is favoured), delta_MH = -2.35 ln alpha_MH (ETS
delta scale; negative = harder for the focal group), its SE by the Robins-Breslow-Greenland (1986) variance of
ln alpha_MH, and the continuity-corrected MH chi-square (|sum A - sum E(A)| - 1/2)^2 / sum Var(A) with
E(A) = n_R m_1 / N, Var(A) = n_R n_F m_1 m_0 / (N^2 (N - 1)), 1 df. The formulas are written here, vectorised over
items (and over label permutations), instead of calling statsmodels' StratifiedTable once per item, because the
permutation test needs them for thousands of relabellings; tests check them against StratifiedTable to 1e-6.

ETS classes (Zwick 2012, ETS RR-12-08; the rules of Dorans & Holland 1993 as NAEP states them after Petersen 1988):
A when delta is not significantly different from 0 (the MH chi-square at `alpha`) or |delta| < 1; C when
|delta| >= 1.5 and |delta| is significantly greater than 1 (the interval-null test H0: |delta| <= 1 of Paek &
Holland 2015, Psychometrika 80(2): (delta/SE)^2 against the noncentral chi-square with 1 df and noncentrality
(1/SE)^2); B otherwise. An infinite delta (one group all right or all wrong in every informative stratum, common
with language models) has no SE: it is C when the chi-square is significant, and its note says so.

Purification (`purify=True`, Holland & Thayer's refinement of the matching criterion, iterated): items classed B
or C leave the matching score for good and the analysis is run again, until a pass flags no new item (or
`max_iter` passes); the studied item always counts in its own score. Letting flagged items return can cycle (it
does on the ENEM 2021 release, where the score without the flagged items no longer overlaps between languages).

Persons that are not independent (one language model answers in both groups): pass `within` (e.g. the model
of each person) to stratify by block x score, and use `mh_permutation`, which swaps the group labels among the
persons of each block (seeded, vectorised): under "no DIF within a model" its p-values are exact.
"""
from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as sps

from mcqa_toolkit.measure.dif.base import MIN_GROUP, DifResult, block_codes, check_groups, with_bh

__all__ = ["DELTA_SCALE", "ets_class", "score_strata", "mh_statistics", "mantel_haenszel"]

DELTA_SCALE = -2.35     # ETS delta = -2.35 ln(alpha_MH)


def ets_class(delta: ArrayLike, delta_se: ArrayLike, p_value: ArrayLike, alpha: float = 0.05) -> np.ndarray:
    """ETS A/B/C per item (Zwick 2012; Paek & Holland 2015 for 'significantly greater than 1'): see the module
    docstring. NaN deltas (no information) are A."""
    d, se, p = (np.asarray(x, dtype=float) for x in (delta, delta_se, p_value))
    ad = np.abs(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        above_one = sps.ncx2.sf((d / se) ** 2, 1, (1.0 / se) ** 2) < alpha
    above_one = np.where(np.isinf(d), True, np.nan_to_num(above_one, nan=0.0).astype(bool))
    is_a = ~(np.nan_to_num(p, nan=1.0) < alpha) | ~(ad >= 1.0)
    is_c = ~is_a & (ad >= 1.5) & above_one
    return np.where(is_a, "A", np.where(is_c, "C", "B"))


def score_strata(u: np.ndarray, anchor: np.ndarray, blocks: np.ndarray,
                 strata: ArrayLike | None = None) -> tuple[np.ndarray, int]:
    """(codes (n, items), K): each person's stratum per studied item, 0..K-1. Default: the number right on the
    `anchor` items plus the studied item; `strata` (one label per person) replaces the score; crossed with
    `blocks` (e.g. the model)."""
    if strata is None:
        s = (u @ anchor.astype(float))[:, None] + u * (~anchor)[None, :]
    else:
        s = np.broadcast_to(pd.factorize(pd.Series(np.asarray(strata, dtype=object)).astype(str))[0][:, None], u.shape)
    codes = blocks[:, None] * (int(s.max()) + 1) + s.astype(np.int64)
    uniq, inverse = np.unique(codes, return_inverse=True)
    return inverse.reshape(u.shape), uniq.size


def _counts(cells: np.ndarray, x: np.ndarray, w: np.ndarray, n_cells: int) -> np.ndarray:
    """sum_p w[b, p] x[p, i] per (b, cell): cells (n, items) flat stratum x item indices -> (B, n_cells)."""
    b = w.shape[0]
    full = (np.arange(b)[:, None] * n_cells + cells.ravel()[None, :]).ravel()
    weights = (w[:, :, None] * x[None]).ravel()
    return np.bincount(full, weights, b * n_cells).reshape(b, n_cells)


def mh_statistics(u: np.ndarray, codes: np.ndarray, k: int, ref: np.ndarray) -> dict[str, np.ndarray]:
    """Mantel-Haenszel per label vector and item: ref (B, n) 1 = reference, 0 = focal -> alpha, delta, delta_se,
    chi2, p_value, each (B, items)."""
    n_items = u.shape[1]
    cells = codes * n_items + np.arange(n_items)[None, :]
    ones = np.ones_like(u)
    shape = (-1, k, n_items)
    tot = _counts(cells, ones, np.ones((1, u.shape[0])), k * n_items).reshape(shape)
    m1 = _counts(cells, u, np.ones((1, u.shape[0])), k * n_items).reshape(shape)
    n_r = _counts(cells, ones, ref, k * n_items).reshape(shape)
    a = _counts(cells, u, ref, k * n_items).reshape(shape)
    n_f, c = tot - n_r, m1 - a
    b, d, m0 = n_r - a, n_f - c, tot - m1
    n = np.where(tot > 0, tot, 1.0)
    r_k, s_k = a * d / n, b * c / n
    p_k, q_k = (a + d) / n, (b + c) / n
    r, s = r_k.sum(axis=1), s_k.sum(axis=1)
    var = np.where(tot > 1, n_r * n_f * m1 * m0 / (n * n * np.maximum(tot - 1, 1.0)), 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = r / s
        var_log = ((p_k * r_k).sum(axis=1) / (2 * r * r) + (p_k * s_k + q_k * r_k).sum(axis=1) / (2 * r * s)
                   + (q_k * s_k).sum(axis=1) / (2 * s * s))
        chi2 = (np.abs(a.sum(axis=1) - (n_r * m1 / n).sum(axis=1)) - 0.5) ** 2 / var
        delta = DELTA_SCALE * np.log(alpha)
    chi2 = np.where(var > 0, chi2, np.nan)
    return {"alpha": alpha, "delta": delta, "delta_se": -DELTA_SCALE * np.sqrt(var_log), "chi2": chi2,
            "p_value": sps.chi2.sf(chi2, 1)}


def _note(alpha: np.ndarray) -> np.ndarray:
    return np.select([np.isnan(alpha), (alpha == 0) | np.isinf(alpha)],
                     ["no stratum holds both groups and both outcomes: no DIF information",
                      "delta infinite (one group all right or all wrong in every informative stratum): no SE; "
                      "the class follows the chi-square alone"], "")


def mantel_haenszel(responses: pd.DataFrame, group: ArrayLike, focal: Hashable, reference: Hashable,
                    strata: ArrayLike | None = None, *, within: ArrayLike | None = None, purify: bool = False,
                    max_iter: int = 10, alpha: float = 0.05, min_group: int = MIN_GROUP) -> DifResult:
    """Mantel-Haenszel DIF per item (see the module docstring). Table columns: item_id, n_focal, n_reference,
    alpha_mh, delta_mh, delta_se, chi2_mh, p_value, ets_class, p_bh, flag_bh (Benjamini-Hochberg at `alpha`),
    note. strata: one label per person (default: total score); within: one block label per person (e.g. the
    model), crossed with the strata; purify: re-stratify without the B/C items (not with `strata`)."""
    if purify and strata is not None:
        raise ValueError("purify re-computes the score strata; it cannot be combined with given strata")
    u, is_f, items, kept = check_groups(responses, group, focal, reference, min_group)
    blocks = block_codes(within, kept)
    anchor = np.ones(len(items), dtype=bool)
    ref = (~is_f).astype(float)[None, :]
    iterations, converged = 0, not purify
    while True:
        iterations += 1
        codes, k = score_strata(u, anchor, blocks, None if strata is None else np.asarray(strata, object)[kept])
        st = {key: v[0] for key, v in mh_statistics(u, codes, k, ref).items()}
        cls = ets_class(st["delta"], st["delta_se"], st["p_value"], alpha)
        if not purify:
            break
        new = anchor & (cls == "A")       # flagged items leave for good: re-admitting them can cycle
        if (new == anchor).all():
            converged = True
            break
        if new.sum() < 2 or iterations >= max_iter:
            break
        anchor = new
    table = pd.DataFrame({"item_id": items, "n_focal": int(is_f.sum()), "n_reference": int((~is_f).sum()),
                          "alpha_mh": st["alpha"], "delta_mh": st["delta"], "delta_se": st["delta_se"],
                          "chi2_mh": st["chi2"], "p_value": st["p_value"], "ets_class": cls,
                          "note": _note(st["alpha"])})
    return DifResult("mantel-haenszel", focal, reference, with_bh(table, alpha),
                     tuple(str(i) for i in np.asarray(items)[anchor]), iterations, converged)
