"""Edge cases, bad input and hand-checked formulas of mcqa_toolkit.irt (no warnings allowed)."""
import math
import warnings

import numpy as np
import pytest

from mcqa_toolkit import irt

A = np.array([1.2, 0.8, 1.5, 2.0, 1.0])
B = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
C = np.array([0.2, 0.15, 0.25, 0.1, 0.2])


@pytest.fixture(autouse=True)
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# formulas ------------------------------------------------------------------------------------------------
def test_irf_derivative_and_information_agree_with_definitions():
    t, h = np.array([-1.3, 0.2, 2.5]), 1e-6
    dp = (irt.irf(t + h, A, B, C) - irt.irf(t - h, A, B, C)) / (2 * h)
    np.testing.assert_allclose(irt.irf_derivative(t, A, B, C), dp, rtol=1e-6)
    p = irt.irf(t, A, B, C)
    np.testing.assert_allclose(irt.item_information(t, A, B, C), dp ** 2 / (p * (1 - p)), rtol=1e-6)
    np.testing.assert_allclose(irt.irf_1pl(t, B), irt.irf(t, 1.0, B))
    np.testing.assert_allclose(irt.irf_2pl(t, A, B, D=1.7), irt.irf_3pl(t, A, B, 0.0, D=1.7))
    assert irt.standard_error(0.0, A, B, C) == pytest.approx(1 / math.sqrt(irt.test_information(0.0, A, B, C)))


def test_lz_star_hand_computed():
    u = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    theta = 0.4
    w_, r_, pp, qq, dps = [], [], [], [], []
    for a, b, c in zip(A, B, C, strict=True):
        e = math.exp(a * (theta - b))
        p = c + (1 - c) * e / (1 + e)
        dp = a * (1 - c) * e / (1 + e) ** 2
        w_.append(math.log(p / (1 - p)))
        r_.append(dp / (p * (1 - p)))
        pp.append(p)
        qq.append(1 - p)
        dps.append(dp)
    cn = sum(d * w for d, w in zip(dps, w_, strict=True)) / sum(d * r for d, r in zip(dps, r_, strict=True))
    W = sum((x - p) * w for x, p, w in zip(u, pp, w_, strict=True))
    tau = math.sqrt(sum((w - cn * r) ** 2 * p * q for w, r, p, q in zip(w_, r_, pp, qq, strict=True)))
    assert irt.person_fit_lz_star(u, [theta], A, B, C, method="ml")[0] == pytest.approx(W / tau, rel=1e-10)
    r0 = (0.5 - theta) / 2.0 ** 2
    got = irt.person_fit_lz_star(u, [theta], A, B, C, method="map", prior_mean=0.5, prior_sd=2.0)[0]
    assert got == pytest.approx((W + cn * r0) / tau, rel=1e-10)
    l0 = sum(x * math.log(p) + (1 - x) * math.log(q) for x, p, q in zip(u, pp, qq, strict=True))
    e_ = sum(p * math.log(p) + q * math.log(q) for p, q in zip(pp, qq, strict=True))
    v_ = sum(p * q * math.log(p / q) ** 2 for p, q in zip(pp, qq, strict=True))
    assert irt.person_fit_lz(u, [theta], A, B, C)[0] == pytest.approx((l0 - e_) / math.sqrt(v_), rel=1e-10)


def test_lz_star_wle_runs_and_undefined_cases_are_nan():
    u = np.array([[1, 0, 1, 1, 0], [np.nan] * 5])
    est = irt.ability_wle(u[:1], A, B)
    assert np.isfinite(irt.person_fit_lz_star(u[:1], est.theta, A, B, method="wle")).all()
    lz = irt.person_fit_lz(u, [0.0, 0.0], A, B)
    assert np.isfinite(lz[0]) and np.isnan(lz[1])
    assert np.isnan(irt.person_fit_lz(u[:1], [np.inf], A, B)[0])
    # one item: its w is a multiple of r, so nothing is left once theta is estimated (tau = 0)
    assert np.isnan(irt.person_fit_lz_star([[1.0]], [0.3], [1.2], [0.1])[0])
    assert np.isfinite(irt.person_fit_lz([[1.0]], [0.3], [1.2], [0.1])[0])


# classical statistics and human comparison ----------------------------------------------------------
def test_classical_statistics_hand_case():
    u = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [1, 1, 1], [0, 0, np.nan]])
    np.testing.assert_allclose(irt.total_score(u), [2, 1, 2, 3, 0])
    np.testing.assert_allclose(irt.proportion_correct(u), [3 / 5, 3 / 5, 2 / 4])
    total = np.array([2, 1, 2, 3, 0.0])
    assert irt.point_biserial(u)[0] == pytest.approx(np.corrcoef(u[:, 0], total)[0, 1])
    assert irt.point_biserial(u)[2] == pytest.approx(np.corrcoef(u[:4, 2], total[:4])[0, 1])
    assert irt.point_biserial(u, rest=True)[0] == pytest.approx(np.corrcoef(u[:, 0], total - u[:, 0])[0, 1])
    assert np.isnan(irt.point_biserial(np.ones((4, 2)))).all()   # no variance: undefined
    stats = irt.item_statistics(u, theta=[0.5, -1, 0.5, 2, -2])
    assert list(stats.to_frame().columns) == ["p_correct", "point_biserial", "discrimination"]


def test_discrimination_index_deterministic_rank_split():
    u = np.array([[0, 1], [1, 1], [1, 0], [0, 0], [1, 1], [0, 1], [1, 0], [1, 1]], dtype=float)
    theta = np.array([0.0, 0.0, 1.0, -1.0, 2.0, 0.0, -2.0, 0.0])  # ties keep input order
    # stable order: rows 6, 3, 0, 1, 5, 7, 2, 4 -> bottom (k = 2) = {6, 3}, top = {2, 4}
    np.testing.assert_allclose(irt.discrimination_index(u, theta), [1.0 - 0.5, 0.5 - 0.0])
    with pytest.raises(ValueError, match="fraction"):
        irt.discrimination_index(u, theta, fraction=0.7)


def test_percentile_residuals_and_guessing_baseline():
    humans = np.array([-1.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(irt.percentile_of([0.0, 2.0, -np.inf], humans), [50.0, 100.0, 0.0])
    u = np.array([[1, 1, 0, 0, 0], [1, 0, 1, 0, np.nan]])
    res = irt.item_residuals(u, [0.0, 0.5], A, B, C)
    exp = irt.expected_correct(np.array([0.0, 0.5]), A, B, C)
    assert res.expected[0] == pytest.approx(exp[:, 0].mean()) and res.expected[4] == pytest.approx(exp[0, 4])
    np.testing.assert_allclose(res.residual, res.observed - res.expected)
    base = irt.random_guessing_baseline(A, B, C, n_options=4, n_sims=4000, rng=np.random.default_rng(0))
    again = irt.random_guessing_baseline(A, B, C, n_options=4, n_sims=4000, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(base.theta, again.theta)
    assert base.accuracy.mean() == pytest.approx(0.25, abs=0.01)
    assert np.isfinite(base.lz).all() and base.summary().shape == (2, 3)


def test_simulate_3pl_is_seeded_and_matches_the_irf():
    theta = np.full(200_000, 0.3)
    u = irt.simulate_3pl(theta, A, B, C, np.random.default_rng(5))
    assert u.dtype == np.uint8 and u.shape == (200_000, 5)
    np.testing.assert_allclose(u.mean(axis=0), irt.irf(0.3, A, B, C), atol=0.005)
    np.testing.assert_array_equal(u[:10], irt.simulate_3pl(theta[:10], A, B, C, np.random.default_rng(5)))


# bad input --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,match", [
    (dict(a=[1, 1, 1, -0.2, 1]), r"a\[3\] = -0.2: discrimination must be > 0"),
    (dict(a=[1, 1, 0, 1, 1]), r"a\[2\] = 0.0"),
    (dict(c=[0, 0, 1.0, 0, 0]), r"c\[2\] = 1.0: guessing must be in \[0, 1\)"),
    (dict(c=[0, -0.1, 0, 0, 0]), r"c\[1\] = -0.1"),
    (dict(a=[1, 1, 1]), r"a has shape \(3,\) but b has \(5,\)"),
    (dict(b=[0, 0, np.nan, 0, 0]), r"b\[2\] = nan"),
    (dict(D=0.0), r"D = 0.0"),
])
def test_bad_item_parameters(kwargs, match):
    args = dict(a=A, b=B, c=C, D=1.0) | kwargs
    with pytest.raises(ValueError, match=match):
        irt.ability_eap(np.ones((2, 5)), **args)


def test_bad_responses_and_theta():
    with pytest.raises(ValueError, match=r"responses\[1, 2\] = 2.0: responses must be 0, 1 or NaN"):
        irt.ability_eap([[1, 0, 1, 0, 1], [1, 0, 2, 0, 1]], A, B)
    with pytest.raises(ValueError, match="4 item columns but the item parameters have 5"):
        irt.ability_map(np.ones((3, 4)), A, B)
    with pytest.raises(ValueError, match="theta has shape"):
        irt.person_fit_lz(np.ones((3, 5)), [0.0, 1.0], A, B)
    with pytest.raises(ValueError, match=r"theta\[1\] = nan"):
        irt.person_fit_lz(np.ones((2, 5)), [0.0, np.nan], A, B)
    with pytest.raises(ValueError, match="prior has shape"):
        irt.ability_eap(np.ones((1, 5)), A, B, grid=[-1, 0, 1], prior=[1, 1])
    with pytest.raises(ValueError, match="method"):
        irt.person_fit_lz_star(np.ones((1, 5)), [0.0], A, B, method="eap")
    with pytest.raises(ValueError, match="rng"):
        irt.simulate_3pl([0.0], A, B, C, rng=0)


def test_item_fit_mean_squares_hand_computed():
    """One item (a=1, b=0, c=0) and persons at theta 0 and ln 3: P = 0.5 and 0.75; answers 1 and 0.
    z^2 = (1-.5)^2/.25 = 1 and (0-.75)^2/.1875 = 3 -> outfit 2; infit = (.25 + .5625) / (.25 + .1875) = 1.857."""
    from mcqa_toolkit.irt import item_fit

    fit = item_fit([[1.0], [0.0]], [0.0, np.log(3.0)], [1.0], [0.0])
    assert fit.outfit[0] == pytest.approx(2.0, abs=1e-12)
    assert fit.infit[0] == pytest.approx(0.8125 / 0.4375, abs=1e-12)
    assert fit.n[0] == 2
    nobody = item_fit([[np.nan]], [0.0], [1.0], [0.0])
    assert np.isnan(nobody.outfit[0]) and np.isnan(nobody.infit[0])
