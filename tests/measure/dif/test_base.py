"""measure.dif.base: Benjamini-Hochberg by hand and as statsmodels' multipletests."""
import numpy as np
from statsmodels.stats.multitest import multipletests

from mcqa_toolkit.measure import bh_adjust


def test_bh_by_hand_and_as_statsmodels():
    """p = (.01, .04, .03, .20): sorted .01 .03 .04 .20 -> p m / rank = .04 .06 .0533 .20 -> running minimum from
    the top = .04 .0533 .0533 .20, back in input order; NaN stays NaN and is not counted (m = 4)."""
    p = [0.01, 0.04, 0.03, 0.20, np.nan]
    np.testing.assert_allclose(bh_adjust(p), [0.04, 0.16 / 3, 0.16 / 3, 0.2, np.nan], rtol=1e-12)
    np.testing.assert_allclose(bh_adjust(p)[:4], multipletests(p[:4], method="fdr_bh")[1], rtol=1e-12)
