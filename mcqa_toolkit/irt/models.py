"""Item response functions (1PL/2PL/3PL), their derivatives, item/test information and standard errors.

All functions use the logistic 3PL  P = c + (1 - c) / (1 + exp(-D a (theta - b)))  with D = 1 unless
given (D = 1.702 approximates the normal ogive). Item parameters are 1-D arrays of length n_items; `a`
and `c` may also be scalars (broadcast). Functions of theta return arrays of shape
`theta.shape + (n_items,)` (item-level) or `theta.shape` (test-level).

This module also holds the input checks shared by the estimators, so every bad input raises a
ValueError naming the argument and the offending position instead of a numpy traceback.
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

# exp(700) is finite in float64; clipping z there changes P by < 1e-300 and keeps every log finite
Z_CLIP = 700.0


def _first_bad(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _fmt(pos: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in pos) + "]"


def check_items(a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                D: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Validated float64 copies of (a, b, c, D), each parameter of shape (n_items,).

    `b` fixes n_items; a scalar `a` or `c` is broadcast; `c=None` means 0 (2PL).
    Raises ValueError for mismatched lengths, a <= 0, non-finite values, c outside [0, 1), D <= 0.
    """
    b_arr = np.asarray(b, dtype=float)
    if b_arr.ndim != 1 or b_arr.size == 0:
        raise ValueError(f"b must be a non-empty 1-D array of difficulties, got shape {b_arr.shape}")
    out: dict[str, np.ndarray] = {"b": b_arr}
    for name, v, default in (("a", a, 1.0), ("c", c, 0.0)):
        arr = np.asarray(default if v is None else v, dtype=float)
        if arr.ndim == 0:
            arr = np.full(b_arr.shape, float(arr))
        if arr.ndim != 1 or arr.shape != b_arr.shape:
            raise ValueError(f"{name} has shape {arr.shape} but b has {b_arr.shape}: item parameter lengths must match")
        out[name] = arr
    a_arr, c_arr = out["a"], out["c"]
    for name in ("a", "b", "c"):
        arr = out[name]
        if not np.isfinite(arr).all():
            i = _first_bad(~np.isfinite(arr))
            raise ValueError(f"{name}{_fmt(i)} = {arr[i]}: item parameters must be finite")
    if (a_arr <= 0).any():
        i = _first_bad(a_arr <= 0)
        raise ValueError(f"a{_fmt(i)} = {a_arr[i]}: discrimination must be > 0")
    if ((c_arr < 0) | (c_arr >= 1)).any():
        i = _first_bad((c_arr < 0) | (c_arr >= 1))
        raise ValueError(f"c{_fmt(i)} = {c_arr[i]}: guessing must be in [0, 1)")
    if not (np.isfinite(D) and D > 0):
        raise ValueError(f"D = {D}: the scaling constant must be finite and > 0")
    return a_arr, b_arr, c_arr, float(D)


def check_theta(theta: ArrayLike, name: str = "theta", allow_inf: bool = True) -> np.ndarray:
    """theta as a float64 array; NaN (and +-inf unless allowed) raise ValueError naming the position."""
    t = np.asarray(theta, dtype=float)
    bad = np.isnan(t) if allow_inf else ~np.isfinite(t)
    if bad.any():
        i = _first_bad(np.atleast_1d(bad))
        raise ValueError(f"{name}{_fmt(i)} = {np.atleast_1d(t)[i]}: ability values must be "
                         f"{'numbers' if allow_inf else 'finite'}")
    return t


def check_responses(responses: ArrayLike, n_items: int, name: str = "responses") -> np.ndarray:
    """A persons x items array (1-D = one person) of 0/1 with NaN = not administered; not copied.

    Only the shape is checked here; values are checked chunk by chunk by `response_chunk`.
    """
    u = np.asarray(responses)
    if u.ndim == 1:
        u = u[None, :]
    if u.ndim != 2:
        raise ValueError(f"{name} must be persons x items (2-D), got shape {u.shape}")
    if u.shape[1] != n_items:
        raise ValueError(f"{name} has {u.shape[1]} item columns but the item parameters have {n_items}")
    if u.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric 0/1 (NaN = not administered), got dtype {u.dtype}")
    return u


def response_chunk(u: np.ndarray, start: int, stop: int,
                   name: str = "responses") -> tuple[np.ndarray, np.ndarray | None]:
    """Rows start:stop as float64 0/1 with NaN replaced by 0, and the administered mask (None if complete).

    Raises ValueError naming the first entry that is not 0, 1 or NaN (global row index).
    """
    x = u[start:stop]
    if x.dtype.kind == "b":
        return x.astype(float), None
    x = x.astype(float, copy=False)
    miss = np.isnan(x)
    bad = (x != 0) & (x != 1) & ~miss
    if bad.any():
        i, j = _first_bad(bad)
        raise ValueError(f"{name}[{start + i}, {j}] = {x[i, j]}: responses must be 0, 1 or NaN")
    if miss.any():
        return np.where(miss, 0.0, x), ~miss
    return x, None


def _z(theta: ArrayLike, a: np.ndarray, b: np.ndarray, D: float) -> np.ndarray:
    t = np.asarray(theta, dtype=float)[..., None]
    return np.clip(D * a * (t - b), -Z_CLIP, Z_CLIP)


def irf(theta: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
        D: float = 1.0) -> np.ndarray:
    """P(correct | theta) under the 3PL (2PL when c is None): shape theta.shape + (n_items,)."""
    a, b, c, D = check_items(a, b, c, D)
    ez = np.exp(_z(check_theta(theta), a, b, D))
    return (ez + c) / (1.0 + ez)


def irf_1pl(theta: ArrayLike, b: ArrayLike, D: float = 1.0) -> np.ndarray:
    """1PL (Rasch with a = 1): shape theta.shape + (n_items,)."""
    return irf(theta, 1.0, b, None, D)


def irf_2pl(theta: ArrayLike, a: ArrayLike, b: ArrayLike, D: float = 1.0) -> np.ndarray:
    """2PL: shape theta.shape + (n_items,)."""
    return irf(theta, a, b, None, D)


def irf_3pl(theta: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike, D: float = 1.0) -> np.ndarray:
    """3PL: shape theta.shape + (n_items,)."""
    return irf(theta, a, b, c, D)


def irf_derivative(theta: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                   D: float = 1.0) -> np.ndarray:
    """dP/dtheta = D a (1 - c) s (1 - s), s the 2PL logistic: shape theta.shape + (n_items,)."""
    a, b, c, D = check_items(a, b, c, D)
    ez = np.exp(_z(check_theta(theta), a, b, D))
    return D * a * (1.0 - c) * (ez / (1.0 + ez)) / (1.0 + ez)


def log_irf(theta: ArrayLike, a: np.ndarray, b: np.ndarray, c: np.ndarray,
            D: float) -> tuple[np.ndarray, np.ndarray]:
    """(ln P, ln Q) without underflow, for already validated parameters: each theta.shape + (n_items,).

    ln Q = ln(1 - c) - ln(1 + e^z) and ln P = ln Q + ln((e^z + c) / (1 - c)), computed in log space
    so that ln P = z - ln(1 + e^z) stays exact when c = 0 and P is tiny.
    """
    z = _z(theta, a, b, D)
    softplus = np.logaddexp(0.0, z)
    log_q = np.log1p(-c) - softplus
    with np.errstate(divide="ignore"):  # ln 0 = -inf for c = 0 is wanted: logaddexp(z, -inf) = z
        log_c = np.log(c)
    return np.logaddexp(z, log_c) - softplus, log_q


def item_information(theta: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                     D: float = 1.0) -> np.ndarray:
    """Fisher information D^2 a^2 (Q/P) ((P - c)/(1 - c))^2: shape theta.shape + (n_items,)."""
    a, b, c, D = check_items(a, b, c, D)
    ez = np.exp(_z(check_theta(theta), a, b, D))
    s = ez / (1.0 + ez)
    # (Q/P) ((P-c)/(1-c))^2 with P = (e^z+c)/(1+e^z), Q = (1-c)/(1+e^z) is (1-c) s^2 / (e^z + c);
    # written with s so that no intermediate overflows at large z
    return (D * a) ** 2 * (1.0 - c) * s * s / (ez + c)


def test_information(theta: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                     D: float = 1.0) -> np.ndarray:
    """Sum of item information over items: shape theta.shape."""
    return item_information(theta, a, b, c, D).sum(axis=-1)


# its name starts with "test": keep pytest from collecting it when imported (mypy knows no function attributes)
cast(Any, test_information).__test__ = False


def standard_error(theta: ArrayLike, a: ArrayLike, b: ArrayLike, c: ArrayLike | None = None,
                   D: float = 1.0) -> np.ndarray | float:
    """1 / sqrt(test information): shape theta.shape; inf where the information underflows to 0."""
    info = np.asarray(test_information(theta, a, b, c, D))
    out = np.full(info.shape, np.inf)
    np.divide(1.0, np.sqrt(info), out=out, where=info > 0)
    return out if out.ndim else float(out)


def b_from_intercept(a: ArrayLike, d: ArrayLike, D: float = 1.0) -> np.ndarray:
    """Difficulty from the slope-intercept form (mirt) D a theta + d: b = -d / (D a), shape (n_items,)."""
    a_, d_, _, D = check_items(a, d, None, D)
    return -d_ / (D * a_)
