"""Person fit (l_z, Snijders' l_z*) and classical item statistics (CTT).

`responses` is persons x items (1-D = one person) of 0/1 with NaN = not administered; missing
responses are left out of every sum. With w = ln(P/Q) the log-likelihood centred at its expectation
is sum (u - P) w, which is how l_z is computed (one exp and one log per response).

A statistic that is undefined for a row or item is NaN by design and documented per function
(e.g. l_z of a person with no administered item, point-biserial of an item everyone got right).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit.irt.ability.base import DEFAULT_CHUNK, check_chunk
from mcqa_toolkit.irt.models import Z_CLIP, check_items, check_responses, check_theta, response_chunk


def _fit_sums(responses, theta, a, b, c, D, chunk_size, star=True):
    """Per person sums over administered items, stacked (5, n): W = sum (u - P) w, V = sum P Q w^2,
    I = sum P' r (test information), C = sum P' w and Warm's J = sum P' P'' / (P Q); all that l_z and
    l_z* need (I, C, J only if star).
    """
    a, b, c, D = check_items(a, b, c, D)
    u = check_responses(responses, b.size)
    t = np.atleast_1d(check_theta(theta))
    if t.shape != (u.shape[0],):
        raise ValueError(f"theta has shape {t.shape} but responses has {u.shape[0]} persons")
    n = u.shape[0]
    out = np.zeros((5, n))
    log1m_c = np.log1p(-c)
    step = check_chunk(chunk_size)
    for start in range(0, n, step):
        stop = min(start + step, n)
        x, mask = response_chunk(u, start, stop)
        tt = t[start:stop]
        finite = np.isfinite(tt)
        z = D * a * (np.where(finite, tt, 0.0)[:, None] - b)
        ez = np.exp(np.clip(z, -Z_CLIP, Z_CLIP))
        inv = 1.0 / (1.0 + ez)
        p = (ez + c) * inv
        w = np.log(ez + c) - log1m_c            # ln(P/Q) = ln(e^z + c) - ln(1 - c); = z when c = 0
        pqw = p * (1.0 - c) * inv * w           # P Q w
        if mask is not None:
            p, pqw = p * mask, pqw * mask
        out[0, start:stop] = ((x - p) * w).sum(axis=1)
        out[1, start:stop] = (pqw * w).sum(axis=1)
        if star:
            dp = D * a * (1.0 - c) * ez * inv * inv  # P'
            dp = dp if mask is None else dp * mask
            info = dp * (D * a * ez / (ez + c))     # P' r = P'^2 / (P Q), r = P' / (P Q)
            out[2, start:stop] = info.sum(axis=1)
            out[3, start:stop] = (dp * w).sum(axis=1)
            out[4, start:stop] = (info * (D * a * (1.0 - 2.0 * ez * inv))).sum(axis=1)  # P'' = D a P' (1-2s)
        out[:, start:stop][:, ~finite] = 0.0    # undefined at infinite theta; made NaN by the callers
    return out, t


def person_fit_lz(responses: ArrayLike, theta: ArrayLike, a: ArrayLike, b: ArrayLike,
                  c: ArrayLike | None = None, D: float = 1.0, chunk_size: int = DEFAULT_CHUNK) -> np.ndarray:
    """Standardised log-likelihood l_z = (l0 - E) / sqrt(V) at the given theta: (n,).

    NaN where undefined: infinite theta or no administered item (V = 0).
    """
    (W, V, _, _, _), _ = _fit_sums(responses, theta, a, b, c, D, check_chunk(chunk_size), star=False)
    out = np.full(W.shape, np.nan)
    np.divide(W, np.sqrt(V), out=out, where=V > 0)
    return out


def person_fit_lz_star(responses: ArrayLike, theta: ArrayLike, a: ArrayLike, b: ArrayLike,
                       c: ArrayLike | None = None, D: float = 1.0, method: str = "ml",
                       prior_mean: float = 0.0, prior_sd: float = 1.0,
                       chunk_size: int = DEFAULT_CHUNK) -> np.ndarray:
    """Snijders' (2001) l_z* corrected for theta being estimated by `method` ('ml', 'map', 'wle'): (n,).

    w = ln(P/Q), r = P'/(PQ), c_n = sum P' w / sum P' r, w~ = w - c_n r, tau^2 = sum w~^2 P Q and
    l_z* = (sum (u - P) w + c_n r0) / tau with r0 = 0 (ML), (prior_mean - theta)/prior_sd^2 (MAP) or
    Warm's J/(2I) (WLE). NaN where undefined (infinite theta, no administered item, tau = 0).
    """
    if method not in ("ml", "map", "wle"):
        raise ValueError(f"method = {method!r}: expected 'ml', 'map' or 'wle'")
    (W, V, info, cw, jw), t = _fit_sums(responses, theta, a, b, c, D, check_chunk(chunk_size))
    cn = np.divide(cw, info, out=np.zeros_like(cw), where=info > 0)
    # tau^2 = sum (w - c_n r)^2 P Q = V - 2 c_n sum w r P Q + c_n^2 sum r^2 P Q, and r P Q = P'
    tau2 = V - 2.0 * cn * cw + cn * cn * info
    if method == "ml":
        r0 = np.zeros_like(W)
    elif method == "map":
        if not (np.isfinite(prior_sd) and prior_sd > 0):
            raise ValueError(f"prior_sd = {prior_sd}: must be finite and > 0")
        r0 = (prior_mean - np.where(np.isfinite(t), t, 0.0)) / prior_sd ** 2
    else:
        r0 = np.divide(jw, 2.0 * info, out=np.zeros_like(jw), where=info > 0)
    out = np.full(W.shape, np.nan)
    ok = (tau2 > 1e-12 * V) & (V > 0) & np.isfinite(t)   # tau = 0 (e.g. one item): w is all explained by r
    np.divide(W + cn * r0, np.sqrt(np.where(ok, tau2, 1.0)), out=out, where=ok)
    return out


# classical test theory ----------------------------------------------------------------------------

def _masked(responses: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    u = check_responses(responses, np.shape(responses)[-1])
    x, mask = response_chunk(u, 0, u.shape[0])
    return x, np.ones_like(x) if mask is None else mask.astype(float)


def total_score(responses: ArrayLike) -> np.ndarray:
    """Number correct per person over administered items: (n,)."""
    return _masked(responses)[0].sum(axis=1)


def proportion_correct(responses: ArrayLike) -> np.ndarray:
    """Per item, correct / administered: (items,); NaN for an item nobody took."""
    x, m = _masked(responses)
    n = m.sum(axis=0)
    return np.divide(x.sum(axis=0), n, out=np.full(n.shape, np.nan), where=n > 0)


def point_biserial(responses: ArrayLike, rest: bool = False) -> np.ndarray:
    """Correlation of each item with the total score (rest score, item excluded, if rest): (items,).

    Over the persons who took the item; NaN when the item or the score has no variance among them.
    """
    x, m = _masked(responses)
    total = x.sum(axis=1)[:, None] - (x if rest else 0.0)     # (n, items)
    n = m.sum(axis=0)
    sx, st = x.sum(axis=0), (m * total).sum(axis=0)
    sxt, stt = (x * total).sum(axis=0), (m * total * total).sum(axis=0)
    cov = n * sxt - sx * st
    var = (n * sx - sx * sx) * (n * stt - st * st)           # x is 0/1 so sum x^2 = sum x
    return np.divide(cov, np.sqrt(np.maximum(var, 0.0)), out=np.full(n.shape, np.nan), where=var > 1e-12)


def discrimination_index(responses: ArrayLike, theta: ArrayLike, fraction: float = 0.25) -> np.ndarray:
    """p(correct | top group) - p(correct | bottom group) per item: (items,). > 0.2 is good.

    Deterministic rank split: persons are ordered by theta with a stable sort (ties keep their input
    order); the bottom group is the first k and the top group the last k, k = max(1, floor(fraction n)).
    NaN for an item nobody in a group took.
    """
    x, m = _masked(responses)
    t = np.atleast_1d(check_theta(theta))
    if t.shape != (x.shape[0],):
        raise ValueError(f"theta has shape {t.shape} but responses has {x.shape[0]} persons")
    if not 0 < fraction <= 0.5:
        raise ValueError(f"fraction = {fraction}: must be in (0, 0.5]")
    if x.shape[0] < 2:
        raise ValueError("discrimination_index needs at least 2 persons")
    k = max(1, int(np.floor(fraction * x.shape[0])))
    order = np.argsort(t, kind="stable")
    p = []
    for rows in (order[-k:], order[:k]):
        n = m[rows].sum(axis=0)
        p.append(np.divide(x[rows].sum(axis=0), n, out=np.full(n.shape, np.nan), where=n > 0))
    return p[0] - p[1]


@dataclass(frozen=True)
class ItemStatistics:
    """Classical statistics per item (items,): proportion correct, point-biserial (item-total) and the
    upper-lower discrimination index (NaN when no theta was given)."""

    p_correct: np.ndarray
    point_biserial: np.ndarray
    discrimination: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"p_correct": self.p_correct, "point_biserial": self.point_biserial,
                           "discrimination": self.discrimination})
        df.index.name = "item"
        return df


def item_statistics(responses: ArrayLike, theta: ArrayLike | None = None,
                    fraction: float = 0.25) -> ItemStatistics:
    """Proportion correct, point-biserial and (given theta (n,)) discrimination index, each (items,)."""
    p = proportion_correct(responses)
    di = (np.full(p.shape, np.nan) if theta is None
          else discrimination_index(responses, theta, fraction))
    return ItemStatistics(p, point_biserial(responses), di)


@dataclass(frozen=True)
class ItemFit:
    """Rasch-style mean squares per item (items,): outfit = mean over takers of z^2 with z = (u - P) /
    sqrt(P Q) (sensitive to unexpected answers far from the item's difficulty), infit = sum (u - P)^2 /
    sum P Q (information-weighted); both have expectation 1 when the model fits, values above ~1.3 flag
    misfit; `n` takers per item. NaN for an item nobody took."""

    outfit: np.ndarray
    infit: np.ndarray
    n: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"outfit": self.outfit, "infit": self.infit, "n": self.n})
        df.index.name = "item"
        return df


def item_fit(responses: ArrayLike, theta: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
             D: float = 1.0) -> ItemFit:
    """Outfit and infit mean squares (Wright & Masters 1982) of every item at the persons' theta (n,)."""
    from mcqa_toolkit.irt.models import irf

    a, b, c, D = check_items(a, b, c, D)
    u = np.asarray(check_responses(responses, b.size), dtype=float)
    t = np.atleast_1d(check_theta(theta, allow_inf=False))
    if t.shape != (u.shape[0],):
        raise ValueError(f"theta has shape {t.shape} but responses has {u.shape[0]} persons")
    p = irf(t, a, b, c, D)
    taken = ~np.isnan(u)
    resid2 = np.where(taken, (np.nan_to_num(u) - p) ** 2, 0.0)
    var = np.where(taken, p * (1.0 - p), 0.0)
    n = taken.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        outfit = np.where(taken, resid2 / np.where(taken, var, 1.0), 0.0).sum(axis=0) / n
        infit = resid2.sum(axis=0) / var.sum(axis=0)
    return ItemFit(np.where(n > 0, outfit, np.nan), np.where(n > 0, infit, np.nan), n)
