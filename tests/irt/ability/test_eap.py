"""ability_eap (and MAP on the same edge patterns): edge patterns, missing responses, chunking, grid and prior."""
import math

import numpy as np
import pytest
from ability_data import EDGE, A, B, C

from mcqa_toolkit import irt


@pytest.mark.parametrize("c", [None, C], ids=["2pl", "3pl"])
def test_edge_patterns_give_finite_eap_and_map(c):
    for est in (irt.ability_eap(EDGE, A, B, c), irt.ability_map(EDGE, A, B, c)):
        assert np.isfinite(est.theta).all() and np.isfinite(est.psd).all()
    eap = irt.ability_eap(EDGE, A, B, c)
    assert eap.theta[0] > eap.theta[3] > eap.theta[2] > eap.theta[4] > eap.theta[1]
    assert eap.theta[2] == pytest.approx(0.0, abs=1e-12)        # no data: the prior mean and SD
    assert irt.ability_map(EDGE, A, B, c).theta[2] == pytest.approx(0.0, abs=1e-9)


def test_single_item_and_bool_and_uint8_inputs():
    one = irt.ability_eap([1.0], [1.3], [0.2], [0.2])
    assert one.theta.shape == (1,) and np.isfinite(one.theta[0])
    u = (EDGE[:2] == 1)
    np.testing.assert_allclose(irt.ability_eap(u, A, B).theta, irt.ability_eap(u.astype(np.uint8), A, B).theta)


def test_missing_responses_leave_the_likelihood():
    u = np.array([[1, np.nan, 0, 1, np.nan]])
    keep = ~np.isnan(u[0])
    full = irt.ability_eap(u, A, B, C)
    sub = irt.ability_eap(u[:, keep], A[keep], B[keep], C[keep])
    np.testing.assert_allclose(full.theta, sub.theta, atol=1e-12)
    np.testing.assert_allclose(irt.person_fit_lz(u, full.theta, A, B, C),
                               irt.person_fit_lz(u[:, keep], full.theta, A[keep], B[keep], C[keep]), atol=1e-12)


def test_chunked_eap_equals_unchunked():
    rng = np.random.default_rng(3)
    u = irt.simulate_3pl(rng.normal(size=1000), A, B, C, rng).astype(float)
    u[rng.random(u.shape) < 0.1] = np.nan
    big = irt.ability_eap(u, A, B, C, chunk_size=10**6)
    small = irt.ability_eap(u, A, B, C, chunk_size=7)
    np.testing.assert_allclose(small.theta, big.theta, atol=1e-13)
    np.testing.assert_allclose(small.psd, big.psd, atol=1e-13)
    np.testing.assert_allclose(irt.person_fit_lz(u, big.theta, A, B, C, chunk_size=7),
                               irt.person_fit_lz(u, big.theta, A, B, C), atol=1e-12)


def test_eap_custom_grid_and_prior():
    grid = np.linspace(-3, 3, 7)
    prior = np.array([0, 0, 1, 1, 1, 0, 0.0])
    est = irt.ability_eap([np.nan] * 5, A, B, grid=grid, prior=prior)
    assert est.theta[0] == pytest.approx(0.0) and est.psd[0] == pytest.approx(math.sqrt(2 / 3))


def test_results_have_frames():
    est = irt.ability_eap(EDGE, A, B, C)
    df = est.to_frame()
    assert list(df.columns) == ["theta", "psd"] and df.attrs["method"] == "eap" and len(df) == 5
