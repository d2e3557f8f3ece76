"""measure.dif.permutation: relabellings within blocks, exact p of a strong DIF item, agreement with the asymptotic
uncorrected MH chi-square (statsmodels), seeded."""
import numpy as np
import pytest
from dif_data import simulate, stratified_table

from mcqa_toolkit.measure import mh_permutation
from mcqa_toolkit.measure.dif.mantel_haenszel import score_strata
from mcqa_toolkit.measure.dif.permutation import permuted_labels


def test_permutation_within_blocks():
    """Relabellings keep each block's number of reference persons; the permutation p of a strong DIF item is
    1 / (B + 1); the DIF-free items' are close (atol 0.05, 999 relabellings) to the asymptotic p of the MH
    chi-square WITHOUT continuity correction (statsmodels, on the block x score strata): the corrected one is
    conservative; the seed fixes them."""
    rng = np.random.default_rng(5)
    blocks = rng.integers(0, 4, 200)
    ref = (rng.random(200) < 0.5).astype(float)
    labels = permuted_labels(ref, blocks, 50, rng)
    for b in range(4):
        assert (labels[:, blocks == b].sum(axis=1) == ref[blocks == b].sum()).all()
    frame, group, _ = simulate(n=200, n_items=10, shift=1.5, dif=(0,), seed=9)
    within = np.tile(["m1", "m2"], 200)
    t = mh_permutation(frame, group, "foc", "ref", within, n_permutations=999, seed=2).table
    assert t["p_perm"].iloc[0] == pytest.approx(1 / 1000) and t["flag_bh"].iloc[0]
    u, is_ref = frame.to_numpy(), group == "ref"
    codes, _ = score_strata(u.astype(float), np.ones(10, bool), (within == "m2").astype(np.int64))
    uncorrected = [stratified_table(u, is_ref, codes, i).test_null_odds(correction=False).pvalue for i in range(10)]
    np.testing.assert_allclose(t["p_perm"].iloc[1:], uncorrected[1:], atol=0.05)
    assert (t["p_perm"].iloc[1:] < t["p_value"].iloc[1:]).all()
    again = mh_permutation(frame, group, "foc", "ref", within, n_permutations=999, seed=2).table
    np.testing.assert_array_equal(again["p_perm"], t["p_perm"])
