"""The solver shared by the modal estimators (MAP, ML, WLE): the root of the method's estimating equation
psi(theta) = 0 inside `bounds`, for all persons at once.

psi and the criterion are first tabulated on a grid (matrix products), the best grid point gives a bracket, then a
bracket-safeguarded Fisher-scoring step refines all persons together. If the criterion increases up to a bound
(e.g. 3PL patterns whose likelihood peaks at -inf), the bound is returned.
"""
from __future__ import annotations

import numpy as np

from mcqa_toolkit.irt.ability.base import DEFAULT_CHUNK, AbilityEstimate, check_chunk
from mcqa_toolkit.irt.models import Z_CLIP, check_items, check_responses, log_irf, response_chunk


def _point_terms(theta: np.ndarray, x: np.ndarray, mask: np.ndarray, a: np.ndarray, b: np.ndarray,
                 c: np.ndarray, D: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At per-person theta (m,): ML score sum m (u - P) r, information I and Warm's J, each (m,)."""
    ez = np.exp(np.clip(D * a * (theta[:, None] - b), -Z_CLIP, Z_CLIP))
    s = ez / (1.0 + ez)
    # r = P'/(PQ) = D a e^z/(e^z + c) and P r = D a s, so psi = sum u r - sum m D a s
    psi = (x * (D * a * ez / (ez + c)) - mask * (D * a * s)).sum(axis=1)
    info_ij = mask * ((D * a) ** 2 * (1.0 - c) * s * s / (ez + c))
    return psi, info_ij.sum(axis=1), (info_ij * (D * a * (1.0 - 2.0 * s))).sum(axis=1)


def _grid_terms(points: np.ndarray, x: np.ndarray, mask: np.ndarray, a: np.ndarray, b: np.ndarray,
                c: np.ndarray, D: float) -> tuple[np.ndarray, ...]:
    """log L, ML score, I and J tabulated on the grid for every person: each (m, G), by matrix products."""
    log_p, log_q = log_irf(points, a, b, c, D)
    ez = np.exp(np.clip(D * a * (points[:, None] - b), -Z_CLIP, Z_CLIP))
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


def solve(responses, a, b, c, D, bounds, method, prior_mean=0.0, prior_sd=1.0,
          chunk_size=DEFAULT_CHUNK, tol=1e-10, max_iter=100) -> AbilityEstimate:
    """theta and SE (n,) by `method` (\"map\", \"ml\" or \"wle\") for responses (n, items), searched in bounds."""
    a, b, c, D = check_items(a, b, c, D)
    u = check_responses(responses, b.size)
    lo, hi = (float(v) for v in bounds)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds = {bounds}: need finite lo < hi")
    if method == "map" and not (np.isfinite(prior_sd) and prior_sd > 0):
        raise ValueError(f"prior_sd = {prior_sd}: must be finite and > 0")
    points = np.linspace(lo, hi, int(np.ceil((hi - lo) / 0.1)) + 1)  # spacing <= 0.1 to bracket the root
    prec = 1.0 / prior_sd ** 2 if method == "map" else 0.0
    n, step = u.shape[0], check_chunk(chunk_size)
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
