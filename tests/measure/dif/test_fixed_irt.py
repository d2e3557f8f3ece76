"""measure.dif.fixed_irt: the leave-one-out EAP, and the residual test recovering DIF against fixed 3PL parameters."""
import numpy as np
import pytest
from dif_data import simulate

from mcqa_toolkit import irt
from mcqa_toolkit.measure import irt_dif
from mcqa_toolkit.measure.dif.fixed_irt import loo_eap


def test_loo_eap_is_the_eap_without_the_studied_item():
    frame, _, params = simulate(n=40, n_items=8, seed=2)
    u, (a, b, c) = frame.to_numpy(float), (params[k].to_numpy() for k in "abc")
    theta = loo_eap(u, a, b, c, np.ones(8, bool))
    for j in (0, 5):
        keep = np.arange(8) != j
        np.testing.assert_allclose(theta[:, j], irt.ability_eap(u[:, keep], a[keep], b[keep], c[keep]).theta,
                                   atol=1e-10)


def test_irt_dif_recovers_dif_against_fixed_3pl_parameters():
    """3PL items (a ~ U(0.8, 2), c = 0.2) with the human parameters fixed; items 0-3 harder for the focal group by
    1 logit: negative residual difference, flagged after BH; DIF-free items at most 2 of 16 at p < .05."""
    rng = np.random.default_rng(30)
    frame, group, params = simulate(n=500, shift=1.0, a=rng.uniform(0.8, 2.0, 20), c=np.full(20, 0.2), seed=31)
    t = irt_dif(frame, group, "foc", "ref", params).table
    assert (t["residual_diff"].iloc[:4] < -0.05).all() and t["flag_bh"].iloc[:4].all()
    assert (t["p_value"].iloc[4:] < 0.05).sum() <= 2
    pinned = irt_dif(frame.iloc[::5], group[::5], "foc", "ref", params).table.set_index("item_id")
    np.testing.assert_allclose(pinned.loc["i00", ["residual_diff", "se", "z"]].to_numpy(float), PINNED_IRT, atol=1e-3)
    with pytest.raises(ValueError, match="no IRT parameters"):
        irt_dif(frame, group, "foc", "ref", params.iloc[1:])


PINNED_IRT = [-0.120016, 0.066017, -1.817958]
