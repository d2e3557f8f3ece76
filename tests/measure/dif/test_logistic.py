"""measure.dif.logistic: against statsmodels' Logit, recovery of uniform and non-uniform DIF, blocks and separation."""
import numpy as np
import pytest
import statsmodels.api as sm
from dif_data import simulate
from scipy import stats as sps

from mcqa_toolkit.measure import logistic_dif, mantel_haenszel
from mcqa_toolkit.measure.dif.logistic import nagelkerke


def test_logistic_agrees_with_statsmodels_logit():
    """LR statistics and Nagelkerke R^2 changes against statsmodels' Logit fitted here (1e-6)."""
    frame, group, _ = simulate(n=200, n_items=8, seed=4)
    t = logistic_dif(frame, group, "foc", "ref").table
    x = frame.sum(axis=1).to_numpy(float)
    g = (group == "foc").astype(float)
    designs = [np.column_stack([np.ones_like(x), x]), np.column_stack([np.ones_like(x), x, g]),
               np.column_stack([np.ones_like(x), x, g, x * g])]
    for i in (0, 5):
        fits = [sm.Logit(frame.iloc[:, i].to_numpy(float), d).fit(disp=0) for d in designs]
        ll = np.array([f.llf for f in fits])
        r2 = nagelkerke(ll, fits[0].llnull, len(x))
        row = t.iloc[i]
        assert row["chi2_uniform"] == pytest.approx(2 * (ll[1] - ll[0]), rel=1e-6, abs=1e-9)
        assert row["chi2_nonuniform"] == pytest.approx(2 * (ll[2] - ll[1]), rel=1e-6, abs=1e-9)
        assert row["p_value"] == pytest.approx(sps.chi2.sf(2 * (ll[2] - ll[0]), 2), rel=1e-6)
        assert row["delta_r2"] == pytest.approx(r2[2] - r2[0], rel=1e-6, abs=1e-12)


def test_logistic_recovers_uniform_and_nonuniform_dif():
    """Items 0-2 harder for the focal group (uniform), item 3 with a different slope (a = 2.5 vs 0.5, same b:
    non-uniform): flagged by the matching test when the score is the purified MH anchor; the DIF-free items at most
    2 of 16 at p < .05; with no DIF at all, at most 7% of 5 x 20 seeded tests at p < .05."""
    a = np.ones(20)
    a[3] = 0.5
    a_f = a.copy()
    a_f[3] = 2.5
    frame, group, _ = simulate(n=500, shift=1.0, dif=(0, 1, 2), a=a, a_focal=a_f, seed=21)
    anchor = mantel_haenszel(frame, group, "foc", "ref", purify=True).anchor
    assert anchor == tuple(f"i{k:02d}" for k in range(4, 20))
    t = logistic_dif(frame, group, "foc", "ref", anchor=anchor).table
    assert (t["p_uniform"].iloc[:3] < 0.01).all() and t["p_nonuniform"].iloc[3] < 0.01
    assert (t["p_value"].iloc[4:] < 0.05).sum() <= 2
    assert set(t["effect"]) <= {"A", "B", "C"} and (t["note"] == "").all()
    strict = logistic_dif(frame, group, "foc", "ref", anchor=anchor, effect_size="zumbo-thomas").table
    assert (strict["effect"] <= t["effect"]).all()          # higher thresholds never give a larger class
    false_pos = sum(int((logistic_dif(*simulate(n=300, dif=(), seed=200 + rep)[:2], "foc", "ref").table["p_value"]
                         < 0.05).sum()) for rep in range(5))
    assert false_pos / 100 <= 0.07


def test_logistic_within_blocks_and_separation():
    frame, group, _ = simulate(n=100, n_items=6, seed=8)
    within = np.repeat(["m1", "m2", "m3", "m4"], 50)
    frame["i05"] = (within == "m2").astype(int)                  # one block always right: separation
    frame["i04"] = 0
    t = logistic_dif(frame, group, "foc", "ref", within=within).table.set_index("item_id")
    assert t.loc["i05", "note"].startswith("separation") and np.isfinite(t.loc["i05", "chi2_dif"])
    assert t.loc["i04", "note"].startswith("every person") and np.isnan(t.loc["i04", "p_value"])
