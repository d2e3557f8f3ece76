"""ability_wle: the root of Warm's estimating equation, finite for perfect and all-wrong patterns."""
import numpy as np
import pytest
from ability_data import A, B, C
from scipy.optimize import brentq

from mcqa_toolkit import irt


@pytest.mark.parametrize("c", [None, C], ids=["2pl", "3pl"])
@pytest.mark.parametrize("right", [1.0, 0.0], ids=["all-correct", "all-wrong"])
def test_wle_is_the_root_of_warms_equation(c, right):
    u = np.full(5, right)
    est = irt.ability_wle(u, A, B, c)                    # finite for perfect and all-wrong patterns
    cc = np.zeros(5) if c is None else c

    def psi(t):
        p = irt.irf(t, A, B, c)
        dp = irt.irf_derivative(t, A, B, c)
        d2p = A * dp * (1 - 2 * (p - cc) / (1 - cc))     # P'' = D a P' (1 - 2 s), s the 2PL part
        info = np.sum(dp ** 2 / (p * (1 - p)))
        return np.sum((u - p) * dp / (p * (1 - p))) + np.sum(dp * d2p / (p * (1 - p))) / (2 * info)

    lo, hi = (est.theta[0] - 0.5, est.theta[0] + 0.5)
    assert est.theta[0] == pytest.approx(brentq(psi, lo, hi, xtol=1e-12), abs=1e-7)
    assert -6 < est.theta[0] < 6
