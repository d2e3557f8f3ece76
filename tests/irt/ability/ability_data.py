"""Item parameters and edge response patterns shared by the ability estimator tests."""
import numpy as np

from mcqa_toolkit import irt

A = np.array([1.2, 0.8, 1.5, 2.0, 1.0])
B = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
C = np.array([0.2, 0.15, 0.25, 0.1, 0.2])
# all correct, all wrong, nothing administered, one item right, one item wrong
EDGE = np.array([[1, 1, 1, 1, 1], [0, 0, 0, 0, 0], [np.nan] * 5, [1] + [np.nan] * 4, [np.nan] * 4 + [0]])


def loglik(theta, u, a, b, c):
    p = irt.irf(theta, a, b, c)
    return float(np.nansum(u * np.log(p) + (1 - u) * np.log1p(-p)))
