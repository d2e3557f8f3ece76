"""Ability (theta) estimation with item parameters held fixed: EAP, sum-score EAP, MAP, ML and WLE.

`responses` is persons x items (a 1-D array is one person) of 0/1 with NaN = not administered; missing
responses are left out of that person's likelihood. Every estimator returns an `AbilityEstimate`.

EAP is one matrix product per chunk of persons over the quadrature grid:
    log L = U @ (ln P - ln Q)^T + M @ (ln Q)^T      (U = responses with NaN -> 0, M = administered mask)
so a million patterns cost a few BLAS calls and never a Python loop over persons.

MAP, ML and WLE solve their estimating equation psi(theta) = 0 inside `bounds`: psi and the criterion
are first tabulated on a grid (again matrix products), the best grid point gives a bracket, then a
bracket-safeguarded Fisher-scoring step refines all persons at once. If the criterion increases up
to a bound (e.g. 3PL patterns whose likelihood peaks at -inf), the bound is returned.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from mcqa_toolkit.irt.models import _Z_CLIP, check_items, check_responses, log_irf, response_chunk

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


def _check_grid(grid: ArrayLike | None, prior: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
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


def _check_chunk(chunk_size: int) -> int:
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


def ability_eap(responses: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                D: float = 1.0, grid: ArrayLike | None = None, prior: ArrayLike | None = None,
                chunk_size: int = DEFAULT_CHUNK) -> AbilityEstimate:
    """Expected a posteriori theta and posterior SD: responses (n, items) -> theta (n,), psd (n,).

    grid: quadrature points (G,), default 40 on [-4, 4]; prior: weights on grid (G,), default N(0, 1)
    evaluated at the points and normalised. A person with no administered item gets the prior mean/SD.
    """
    a, b, c, D = check_items(a, b, c, D)
    u = check_responses(responses, b.size)
    points, w = _check_grid(grid, prior)
    log_p, log_q = log_irf(points, a, b, c, D)                 # (G, J)
    wt = np.ascontiguousarray((log_p - log_q).T)              # (J, G)
    log_qt = np.ascontiguousarray(log_q.T)
    with np.errstate(divide="ignore"):                        # zero prior weight -> -inf -> exp = 0
        base = np.log(w)
    complete_base = base + log_q.sum(axis=1)
    n = u.shape[0]
    theta, psd = np.empty(n), np.empty(n)
    step = _check_chunk(chunk_size)
    for start in range(0, n, step):
        stop = min(start + step, n)
        x, mask = response_chunk(u, start, stop)
        ll = x @ wt
        ll += complete_base if mask is None else mask @ log_qt + base
        theta[start:stop], psd[start:stop] = posterior_moments(ll, points)
    return AbilityEstimate(theta, psd, "eap")


def ability_eap_sum_score(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None, D: float = 1.0,
                          grid: ArrayLike | None = None, prior: ArrayLike | None = None) -> AbilityEstimate:
    """EAP of theta given only the sum score (Lord-Wingersky): theta, psd of shape (n_items + 1,).

    Row k is the posterior given k correct answers out of all n_items.
    """
    a, b, c, D = check_items(a, b, c, D)
    points, w = _check_grid(grid, prior)
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


def _point_terms(theta: np.ndarray, x: np.ndarray, mask: np.ndarray, a: np.ndarray, b: np.ndarray,
                 c: np.ndarray, D: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At per-person theta (m,): ML score sum m (u - P) r, information I and Warm's J, each (m,)."""
    ez = np.exp(np.clip(D * a * (theta[:, None] - b), -_Z_CLIP, _Z_CLIP))
    s = ez / (1.0 + ez)
    # r = P'/(PQ) = D a e^z/(e^z + c) and P r = D a s, so psi = sum u r - sum m D a s
    psi = (x * (D * a * ez / (ez + c)) - mask * (D * a * s)).sum(axis=1)
    info_ij = mask * ((D * a) ** 2 * (1.0 - c) * s * s / (ez + c))
    return psi, info_ij.sum(axis=1), (info_ij * (D * a * (1.0 - 2.0 * s))).sum(axis=1)


def _grid_terms(points: np.ndarray, x: np.ndarray, mask: np.ndarray, a: np.ndarray, b: np.ndarray,
                c: np.ndarray, D: float) -> tuple[np.ndarray, ...]:
    """log L, ML score, I and J tabulated on the grid for every person: each (m, G), by matrix products."""
    log_p, log_q = log_irf(points, a, b, c, D)
    ez = np.exp(np.clip(D * a * (points[:, None] - b), -_Z_CLIP, _Z_CLIP))
    s = ez / (1.0 + ez)
    info = (D * a) ** 2 * (1.0 - c) * s * s / (ez + c)
    ll = x @ (log_p - log_q).T + mask @ log_q.T
    psi = x @ (D * a * ez / (ez + c)).T - mask @ (D * a * s).T
    return ll, psi, mask @ info.T, mask @ (info * (D * a * (1.0 - 2.0 * s))).T


def _bracket(points: np.ndarray, psi: np.ndarray, crit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per person, the grid interval holding the best root of psi (m,), (m,); left == right at a bound.

    Candidates are the intervals where psi falls from >= 0 to < 0 (local maxima), the lower bound if
    psi < 0 there and the upper bound if psi >= 0 there; the candidate with the highest criterion wins.
    Choosing by psi's sign changes (not by the criterion's grid maximum) matters for the 3PL WLE, whose
    estimating equation is not the derivative of ln L + ln I / 2.
    """
    up = psi >= 0
    crit = np.maximum(crit, -1e300)              # -inf criteria (ln I = -inf) stay comparable
    inner = np.where(up[:, :-1] & ~up[:, 1:], np.maximum(crit[:, :-1], crit[:, 1:]), -np.inf)
    cand = np.column_stack([np.where(~up[:, 0], crit[:, 0], -np.inf), inner,
                            np.where(up[:, -1], crit[:, -1], -np.inf)])
    k = np.argmax(cand, axis=1)                  # 0: lower bound, 1..G-1: interval k-1, G: upper bound
    inside = (k >= 1) & (k < points.size)
    left = np.where(inside, points[np.clip(k - 1, 0, points.size - 1)], np.where(k == 0, points[0], points[-1]))
    right = np.where(inside, points[np.clip(k, 0, points.size - 1)], left)
    return left, right


def _equation(method: str, t, psi, info, jw, prec: float, prior_mean: float):
    """The method's estimating function psi(t) and its Fisher-scoring slope, from the ML terms."""
    if method == "map":
        return psi - prec * (t - prior_mean), info + prec
    if method == "wle":
        return psi + jw / (2.0 * np.maximum(info, np.finfo(float).tiny)), info
    return psi, info


def _solve(responses, a, b, c, D, bounds, method, prior_mean=0.0, prior_sd=1.0,
           chunk_size=DEFAULT_CHUNK, tol=1e-10, max_iter=100) -> AbilityEstimate:
    a, b, c, D = check_items(a, b, c, D)
    u = check_responses(responses, b.size)
    lo, hi = (float(v) for v in bounds)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds = {bounds}: need finite lo < hi")
    if method == "map" and not (np.isfinite(prior_sd) and prior_sd > 0):
        raise ValueError(f"prior_sd = {prior_sd}: must be finite and > 0")
    points = np.linspace(lo, hi, int(np.ceil((hi - lo) / 0.1)) + 1)  # spacing <= 0.1 to bracket the root
    prec = 1.0 / prior_sd ** 2 if method == "map" else 0.0
    n, step = u.shape[0], _check_chunk(chunk_size)
    theta, psd = np.empty(n), np.empty(n)
    for start in range(0, n, step):
        stop = min(start + step, n)
        x, mask = response_chunk(u, start, stop)
        mask = np.ones_like(x) if mask is None else mask.astype(float)
        n_admin, n_right = mask.sum(axis=1), x.sum(axis=1)
        if method != "map" and (n_admin == 0).any():
            i = start + int(np.argmax(n_admin == 0))
            raise ValueError(f"responses[{i}] has no administered item: {method.upper()} is undefined "
                             "(use ability_eap or ability_map)")
        ll, psi, info, jw = _grid_terms(points, x, mask, a, b, c, D)
        crit = ll - 0.5 * prec * (points - prior_mean) ** 2          # log posterior (MAP) or log L
        if method == "wle":
            with np.errstate(divide="ignore"):  # I underflowing to 0 far from the items: ln 0 = -inf is fine
                crit = ll + 0.5 * np.log(info)
        left, right = _bracket(points, _equation(method, points, psi, info, jw, prec, prior_mean)[0], crit)
        t = 0.5 * (left + right)
        active = left < right                    # a maximum at a bound needs no refinement
        for _ in range(max_iter):                # bracket-safeguarded Fisher scoring, all persons at once
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
            ti = t[idx]
            sc, slope = _equation(method, ti, *_point_terms(ti, x[idx], mask[idx], a, b, c, D), prec, prior_mean)
            left[idx] = np.where(sc >= 0, ti, left[idx])
            right[idx] = np.where(sc < 0, ti, right[idx])
            new = ti + sc / np.maximum(slope, 1e-12)
            new = np.where((new > left[idx]) & (new < right[idx]), new, 0.5 * (left[idx] + right[idx]))
            t[idx] = new
            active[idx[(np.abs(new - ti) < tol) | (right[idx] - left[idx] < tol)]] = False
        info_t = _point_terms(t, x, mask, a, b, c, D)[1] + prec
        se = np.full(t.shape, np.inf)
        np.divide(1.0, np.sqrt(info_t), out=se, where=info_t > 0)
        if method == "ml":  # documented infinities: the likelihood is monotone for these patterns
            t = np.where(n_right == n_admin, np.inf, np.where(n_right == 0, -np.inf, t))
            se = np.where(np.isfinite(t), se, np.inf)
        theta[start:stop], psd[start:stop] = t, se
    return AbilityEstimate(theta, psd, method)


def ability_map(responses: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                D: float = 1.0, prior_mean: float = 0.0, prior_sd: float = 1.0,
                bounds: tuple[float, float] = (-6.0, 6.0), chunk_size: int = DEFAULT_CHUNK) -> AbilityEstimate:
    """Posterior mode with a N(prior_mean, prior_sd^2) prior, searched in bounds: theta, psd (n,).

    Always finite; a person with no administered item gets prior_mean.
    """
    return _solve(responses, a, b, c, D, bounds, "map", prior_mean, prior_sd, chunk_size)


def ability_ml(responses: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
               D: float = 1.0, bounds: tuple[float, float] = (-6.0, 6.0),
               chunk_size: int = DEFAULT_CHUNK) -> AbilityEstimate:
    """Maximum likelihood theta and SE 1/sqrt(I): (n,), (n,).

    All-correct patterns return theta = +inf and all-wrong -inf (SE inf): their likelihood has no
    maximum. Other patterns are searched in `bounds`; a bound is returned if the likelihood keeps
    rising towards it (possible under the 3PL). A person with no administered item raises ValueError.
    """
    return _solve(responses, a, b, c, D, bounds, "ml", chunk_size=chunk_size)


def ability_wle(responses: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                D: float = 1.0, bounds: tuple[float, float] = (-6.0, 6.0),
                chunk_size: int = DEFAULT_CHUNK) -> AbilityEstimate:
    """Warm's weighted likelihood theta (root of score + J/(2I)) and SE 1/sqrt(I): (n,), (n,).

    Finite for all-correct/all-wrong 1PL/2PL patterns; under the 3PL an all-wrong pattern may reach the
    lower bound. A person with no administered item raises ValueError.
    """
    return _solve(responses, a, b, c, D, bounds, "wle", chunk_size=chunk_size)
