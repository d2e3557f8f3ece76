"""MML-EM calibration: recovery of seeded simulated parameters (atol 0.1) and agreement with girth.

girth 0.8's `threepl_mml` breaks on numpy 2: its inner `fminbound` objective returns a 1-element array,
which numpy 2 no longer assigns into a scalar slot. `_girth` patches that module's `fminbound` to
squeeze the objective to a float (test-only; the package never imports girth).
"""
import sys
import warnings

import numpy as np
import pytest
from scipy.optimize import fminbound

from mcqa_toolkit import irt


@pytest.fixture(scope="module")
def girth():
    import girth  # the independent reference (test extra); a missing girth fails, never skips

    module = sys.modules["girth.unidimensional.dichotomous.rasch_mml"]
    original = module.fminbound
    module.fminbound = lambda f, *args, **kw: fminbound(lambda x: float(np.squeeze(f(x))), *args, **kw)
    yield girth
    module.fminbound = original


def test_2pl_recovery():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.7, 2.0, 20), rng.uniform(-2.0, 2.0, 20)
    u = irt.simulate_3pl(rng.normal(size=40_000), a, b, None, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = irt.twopl_mml(u)
    assert fit.converged and fit.model == "2pl"
    np.testing.assert_allclose(fit.a, a, atol=0.1)
    np.testing.assert_allclose(fit.b, b, atol=0.1)
    assert (fit.c == 0).all() and np.isfinite(fit.log_likelihood)


def test_3pl_recovery_with_beta_prior_on_c():
    rng = np.random.default_rng(0)
    a, b, c = rng.uniform(0.8, 1.8, 20), rng.uniform(-0.5, 2.0, 20), rng.uniform(0.1, 0.25, 20)
    u = irt.simulate_3pl(rng.normal(size=150_000), a, b, c, rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = irt.threepl_mml(u, c_prior=(5, 17))
    assert fit.converged
    np.testing.assert_allclose(fit.a, a, atol=0.1)
    np.testing.assert_allclose(fit.b, b, atol=0.1)
    np.testing.assert_allclose(fit.c, c, atol=0.1)
    assert list(fit.to_frame().columns) == ["a", "b", "c"]


def test_missing_responses_and_D():
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.8, 1.6, 10), rng.uniform(-1.5, 1.5, 10)
    u = irt.simulate_3pl(rng.normal(size=20_000), a, b, None, rng, D=1.702).astype(float)
    u[rng.random(u.shape) < 0.3] = np.nan                    # missing completely at random
    fit = irt.twopl_mml(u, D=1.702)
    np.testing.assert_allclose(fit.a, a, atol=0.1)
    np.testing.assert_allclose(fit.b, b, atol=0.1)


def test_prior_on_a_keeps_a_small_llm_population_finite():
    rng = np.random.default_rng(2)
    u = irt.simulate_3pl(rng.normal(size=60), np.full(8, 3.0), np.linspace(-1, 1, 8), None, rng)
    fit = irt.twopl_mml(u, a_prior=(0.0, 0.5))
    assert np.isfinite(fit.a).all() and (fit.a < 6).all()


def test_2pl_matches_girth(girth):
    rng = np.random.default_rng(4)
    a, b = rng.uniform(0.7, 2.0, 15), rng.uniform(-2.0, 2.0, 15)
    u = irt.simulate_3pl(rng.normal(size=5_000), a, b, None, rng)
    ours = irt.twopl_mml(u)
    theirs = girth.twopl_mml(u.T.astype(int))               # girth: items x persons
    np.testing.assert_allclose(ours.a, theirs["Discrimination"], atol=0.01)
    np.testing.assert_allclose(ours.b, theirs["Difficulty"], atol=0.01)


def test_3pl_without_prior_matches_girth(girth):
    rng = np.random.default_rng(0)
    a, b, c = rng.uniform(0.8, 1.8, 12), rng.uniform(-0.5, 2.0, 12), rng.uniform(0.1, 0.25, 12)
    u = irt.simulate_3pl(rng.normal(size=10_000), a, b, c, rng)
    ours = irt.threepl_mml(u, c_prior=None)
    theirs = girth.threepl_mml(u.T.astype(int))
    np.testing.assert_allclose(ours.a, theirs["Discrimination"], atol=0.02)
    np.testing.assert_allclose(ours.b, theirs["Difficulty"], atol=0.02)
    np.testing.assert_allclose(ours.c, theirs["Guessing"], atol=0.02)


def test_eap_matches_girth_on_the_same_quadrature(girth):
    from girth.utilities.utils import _get_quadrature_points
    from scipy.stats import norm

    rng = np.random.default_rng(5)
    a, b, c = rng.uniform(0.8, 2.0, 30), rng.uniform(-1, 2, 30), rng.uniform(0.1, 0.25, 30)
    u = irt.simulate_3pl(rng.normal(size=2_000), a, b, c, rng)
    points, weights = _get_quadrature_points(41, -4.5, 4.5)    # girth's defaults (Gauss-Legendre)
    ours = irt.ability_eap(u, a, b, c, grid=points, prior=weights * norm.pdf(points))
    np.testing.assert_allclose(ours.theta, girth.ability_3pl_eap(u.T.astype(int), b, a, c), atol=1e-8)


@pytest.mark.parametrize("column,match", [(np.ones(50), "everybody answered it correctly"),
                                          (np.zeros(50), "nobody answered it correctly"),
                                          (np.full(50, np.nan), "no person took it")])
def test_unidentified_items_raise(column, match):
    u = np.random.default_rng(0).integers(0, 2, (50, 4)).astype(float)
    u[:, 2] = column
    with pytest.raises(ValueError, match=r"responses\[:, 2\]: " + match):
        irt.twopl_mml(u)


def test_bad_priors_raise():
    u = np.random.default_rng(0).integers(0, 2, (50, 4))
    with pytest.raises(ValueError, match="c_prior"):
        irt.threepl_mml(u, c_prior=(0, 5))
    with pytest.raises(ValueError, match="a_prior"):
        irt.twopl_mml(u, a_prior=(0, -1))
