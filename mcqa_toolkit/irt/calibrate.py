"""Item calibration by marginal maximum likelihood (Bock-Aitkin EM): `twopl_mml` and `threepl_mml`.

For LLM populations the persons are e.g. models x option shuffles. `responses` is persons x items of
0/1 with NaN = not administered. theta ~ N(0, 1) on a fixed quadrature grid identifies the scale.

E-step: the posterior of every person over the grid is one matrix product (as in `ability_eap`),
giving per item and node the expected number of takers n_ig and of correct answers r_ig.
M-step: every item maximises sum_g r_ig ln P_i(g) + (n_ig - r_ig) ln Q_i(g) + log priors, all items
at once by Fisher scoring on (ln(D a), intercept d = -D a b, logit c) with step halving, so a > 0 and
0 < c < 1 hold by construction. Priors: Beta(alpha, beta) on c (3PL; default Beta(5, 17), mode 0.2 for
five-option items), optional lognormal on a.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.special import expit, log_expit, logit

from mcqa_toolkit.irt.ability import normal_grid
from mcqa_toolkit.irt.models import check_responses, log_irf, response_chunk


@dataclass(frozen=True)
class Calibration:
    """Estimated item parameters a, b, c (items,) on the D metric, with fit diagnostics.

    log_likelihood is the marginal log-likelihood of the data at the estimates (priors excluded).
    """

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    D: float
    model: str
    log_likelihood: float
    n_iter: int
    converged: bool

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"a": self.a, "b": self.b, "c": self.c})
        df.index.name = "item"
        df.attrs.update(model=self.model, D=self.D, log_likelihood=self.log_likelihood,
                        n_iter=self.n_iter, converged=self.converged)
        return df


def _prepare(responses: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    u = check_responses(responses, np.shape(responses)[-1])
    x, mask = response_chunk(u, 0, u.shape[0])
    mask = np.ones_like(x) if mask is None else mask.astype(float)
    n, right = mask.sum(axis=0), x.sum(axis=0)
    for bad, what in ((n == 0, "no person took it"), (right == 0, "nobody answered it correctly"),
                      ((right == n) & (n > 0), "everybody answered it correctly")):
        if bad.any():
            j = int(np.argmax(bad))
            raise ValueError(f"responses[:, {j}]: {what}, so its parameters are not identified; drop the item")
    return x, mask


def _unique_patterns(x: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of (x, mask) and how many persons gave each: (m, items), (m, items), (m,)."""
    code = (x + 2.0 * (1.0 - mask)).astype(np.uint8)          # 0 wrong, 1 right, 2 not administered
    rows, count = np.unique(code, axis=0, return_counts=True)
    return (rows == 1).astype(float), (rows != 2).astype(float), count.astype(float)


def _objective(lam, d, g, points, r, nn, three, c_prior, a_prior, D):
    """Per-item expected complete-data log-likelihood plus log priors: (items,)."""
    z = np.exp(lam)[:, None] * points + d[:, None]
    log_s, log_1ms = log_expit(z), log_expit(-z)
    if not three:
        log_p, log_q = log_s, log_1ms
    else:  # ln P = ln(c + (1-c) s), ln Q = ln(1-c) + ln(1-s), in log space so nothing underflows
        log_c, log_1mc = log_expit(g)[:, None], log_expit(-g)[:, None]
        log_p, log_q = np.logaddexp(log_c, log_1mc + log_s), log_1mc + log_1ms
    f = (r * log_p + (nn - r) * log_q).sum(axis=1)
    if three and c_prior is not None:
        f += (c_prior[0] - 1) * log_expit(g) + (c_prior[1] - 1) * log_expit(-g)
    if a_prior is not None:
        f += -0.5 * ((lam - np.log(D) - a_prior[0]) / a_prior[1]) ** 2 - lam
    return f


def _m_step(lam, d, g, points, r, nn, three, c_prior, a_prior, D, n_newton=10):
    """Fisher scoring for every item at once on (lam, d[, g]); step halving keeps each item ascending."""
    k = 3 if three else 2
    f_old = _objective(lam, d, g, points, r, nn, three, c_prior, a_prior, D)
    for _ in range(n_newton):
        alpha = np.exp(lam)[:, None]
        s = expit(alpha * points + d[:, None])
        c = expit(g)[:, None] if three else np.zeros_like(s)
        p = c + (1 - c) * s
        pq = np.maximum(p * (1 - p), 1e-300)
        ds = (1 - c) * s * (1 - s)
        jac = [ds * alpha * points, ds] + ([(1 - s) * c * (1 - c)] if three else [])
        resid = (r - nn * p) / pq
        grad = np.stack([(resid * j).sum(axis=1) for j in jac], axis=1)          # (items, k)
        info = np.stack([np.stack([(nn * ji * jj / pq).sum(axis=1) for jj in jac], axis=1)
                         for ji in jac], axis=1)                                 # (items, k, k)
        if a_prior is not None:
            grad[:, 0] += -(lam - np.log(D) - a_prior[0]) / a_prior[1] ** 2 - 1.0
            info[:, 0, 0] += 1.0 / a_prior[1] ** 2
        if three and c_prior is not None:
            cc = expit(g)
            grad[:, 2] += (c_prior[0] - 1) * (1 - cc) - (c_prior[1] - 1) * cc
            info[:, 2, 2] += max(c_prior[0] + c_prior[1] - 2, 0.0) * cc * (1 - cc)
        info += 1e-9 * np.eye(k)                  # keeps nearly flat directions (e.g. c) solvable
        step = np.linalg.solve(info, grad[..., None])[..., 0]
        step = np.clip(step, -1.0, 1.0)           # no jump of more than e-fold in a, 1 logit elsewhere
        scale = np.ones(lam.shape)
        for _half in range(12):                   # step halving, vectorised over items
            nl, nd = lam + scale * step[:, 0], d + scale * step[:, 1]
            ng = g + scale * step[:, 2] if three else g
            f_new = _objective(nl, nd, ng, points, r, nn, three, c_prior, a_prior, D)
            worse = ~(f_new >= f_old - 1e-12)
            if not worse.any():
                break
            scale = np.where(worse, scale / 2, scale)
        keep = f_new >= f_old - 1e-12
        lam, d = np.where(keep, nl, lam), np.where(keep, nd, d)
        g = np.where(keep, ng, g) if three else g
        f_old = np.where(keep, f_new, f_old)
        if np.abs(scale[:, None] * step).max() < 1e-8:
            break
    return lam, d, g


def _e_step(x, mask, count, complete, points, log_w, lam, d, g, three, D, chunk=65536):
    """Expected correct r and takers nn per item and node (items, G), and the marginal log-likelihood.

    Rows are distinct response patterns weighted by their count (persons sharing a pattern share a
    posterior). Large chunks keep the number of BLAS calls (thread hand-offs) small.
    """
    alpha, c = np.exp(lam), expit(g) if three else np.zeros_like(lam)
    log_p, log_q = log_irf(points, alpha / D, -d / alpha, np.minimum(c, 1 - 1e-12), D)
    wt = np.ascontiguousarray((log_p - log_q).T)                             # (items, G)
    base = (log_q.sum(axis=1) if complete else 0.0) + log_w
    r, nn, loglik = np.zeros(wt.shape), np.zeros(wt.shape), 0.0
    for start in range(0, x.shape[0], chunk):
        xs, ms, ws = x[start:start + chunk], mask[start:start + chunk], count[start:start + chunk, None]
        post = xs @ wt
        post += base if complete else ms @ log_q.T + base                     # (chunk, G) log posterior
        top = post.max(axis=1, keepdims=True)
        post -= top
        np.exp(post, out=post)
        mass = post.sum(axis=1, keepdims=True)
        loglik += float(((np.log(mass) + top) * ws).sum())
        post *= ws / mass
        r += xs.T @ post
        nn += post.sum(axis=0) if complete else ms.T @ post
    return r, nn, loglik


def _mml(responses, D, three, c_prior, a_prior, n_points, bounds, max_iter, tol) -> Calibration:
    if not (np.isfinite(D) and D > 0):
        raise ValueError(f"D = {D}: the scaling constant must be finite and > 0")
    if c_prior is not None:
        c_prior = tuple(float(v) for v in np.ravel(c_prior))
        if not (len(c_prior) == 2 and min(c_prior) > 0):
            raise ValueError(f"c_prior = {c_prior}: expected Beta parameters (alpha, beta), both > 0")
    if a_prior is not None:
        a_prior = tuple(float(v) for v in np.ravel(a_prior))
        if not (len(a_prior) == 2 and a_prior[1] > 0):
            raise ValueError(f"a_prior = {a_prior}: expected (mean, sd) of ln a with sd > 0")
    x, mask = _prepare(responses)
    x, mask, count = _unique_patterns(x, mask)
    points, w = normal_grid(n_points, *bounds)
    log_w = np.log(w)
    p_item = count @ x / (count @ mask)
    c0 = 0.2 if c_prior is None else (c_prior[0] - 1) / max(c_prior[0] + c_prior[1] - 2, 1e-9)
    c0 = float(np.clip(c0, 0.01, 0.5)) if three else 0.0
    lam = np.full(x.shape[1], np.log(D * 1.0))
    d = logit(np.clip((p_item - c0) / (1 - c0), 0.02, 0.98))   # b0 = -logit(p) / (D a0)
    g = np.full(x.shape[1], logit(c0) if three else 0.0)
    old = np.concatenate([lam, d, g])
    complete = bool(mask.min() == 1.0)           # then mask products reduce to sums
    converged, it = False, 0
    while it < max_iter and not converged:
        it += 1
        r, nn, _ = _e_step(x, mask, count, complete, points, log_w, lam, d, g, three, D)
        lam, d, g = _m_step(lam, d, g, points, r, nn, three, c_prior, a_prior, D)
        new = np.concatenate([lam, d, g])
        converged = bool(np.abs(new - old).max() < tol)
        old = new
    _, _, loglik = _e_step(x, mask, count, complete, points, log_w, lam, d, g, three, D)
    alpha, c = np.exp(lam), expit(g) if three else np.zeros_like(lam)
    return Calibration(alpha / D, -d / alpha, c, float(D), "3pl" if three else "2pl", loglik, it, converged)


def twopl_mml(responses: ArrayLike, D: float = 1.0, a_prior: tuple[float, float] | None = None,
              n_points: int = 61, bounds: tuple[float, float] = (-6.0, 6.0), max_iter: int = 2000,
              tol: float = 1e-5) -> Calibration:
    """2PL item parameters by MML-EM: responses (persons, items) -> Calibration with a, b (items,), c = 0.

    a_prior: optional (mean, sd) of ln a (lognormal prior on a), useful for small LLM populations.
    Items that nobody, or everybody, answered correctly raise ValueError (not identified).
    """
    return _mml(responses, D, False, None, a_prior, n_points, bounds, max_iter, tol)


def threepl_mml(responses: ArrayLike, D: float = 1.0, c_prior: tuple[float, float] | None = (5.0, 17.0),
                a_prior: tuple[float, float] | None = None, n_points: int = 61,
                bounds: tuple[float, float] = (-6.0, 6.0), max_iter: int = 2000,
                tol: float = 1e-5) -> Calibration:
    """3PL item parameters by MML-EM with a Beta(c_prior) prior on c (None = flat): -> Calibration.

    The default Beta(5, 17) has mode 0.2 (five options); for four options Beta(6, 16) has mode 0.25.
    """
    return _mml(responses, D, True, c_prior, a_prior, n_points, bounds, max_iter, tol)
