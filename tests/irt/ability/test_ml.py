"""ability_ml: documented infinities, the likelihood equation, bounds."""
import numpy as np
import pytest
from ability_data import EDGE, A, B, C, loglik

from mcqa_toolkit import irt


def test_ml_documented_infinities_and_all_missing_error():
    est = irt.ability_ml(np.delete(EDGE, 2, axis=0), A, B)
    assert list(est.theta) == [np.inf, -np.inf, np.inf, -np.inf]
    assert np.isinf(est.psd).all()
    with pytest.raises(ValueError, match=r"responses\[2\] has no administered item"):
        irt.ability_ml(EDGE, A, B)
    with pytest.raises(ValueError, match=r"responses\[2\]"):
        irt.ability_wle(EDGE, A, B)


def test_ml_solves_the_likelihood_equation_and_respects_bounds():
    u = np.array([[1, 1, 0, 1, 0], [1, 0, 1, 0, 0]], dtype=float)
    est = irt.ability_ml(u, A, B, C)
    for row, t in zip(u, est.theta, strict=True):
        if -6 < t < 6:
            h = 1e-5
            slope = (loglik(t + h, row, A, B, C) - loglik(t - h, row, A, B, C)) / (2 * h)
            assert slope == pytest.approx(0, abs=1e-5)
    # 3PL: answering only the hardest item right makes the likelihood peak at -inf -> the bound
    low = irt.ability_ml(np.array([[0, 0, 0, 0, 1]]), A, B, C, bounds=(-4.0, 4.0))
    assert low.theta[0] == -4.0
