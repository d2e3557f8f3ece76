"""measure.dif.mantel_haenszel: a hand example, R's published UCBAdmissions example, statsmodels' StratifiedTable,
ETS classes, recovery of seeded simulated DIF, purification, pinned numbers, and the input checks every method
shares."""
import numpy as np
import pandas as pd
import pytest
from dif_data import simulate, stratified_table
from scipy import stats as sps

from mcqa_toolkit.measure import MIN_GROUP, ets_class, mantel_haenszel
from mcqa_toolkit.measure.dif.mantel_haenszel import score_strata


def test_mh_hand_computed_two_strata():
    """Two strata of 20 persons (reference 10, focal 10) given as `strata`:
        stratum 1: reference A = 6 right, B = 4 wrong; focal C = 3 right, D = 7 wrong
        stratum 2: reference A = 8, B = 2;             focal C = 6, D = 4
    alpha_MH = (6*7/20 + 8*4/20) / (4*3/20 + 2*6/20) = 74 / 24 = 37/12; delta = -2.35 ln(37/12).
    E(A) = 10*9/20 + 10*14/20 = 4.5 + 7 = 11.5, sum A = 14; Var(A) = 10*10*9*11/(20^2*19) + 10*10*14*6/(20^2*19)
    = 18300/7600; chi2 = (|14 - 11.5| - 0.5)^2 / (18300/7600) = 4 * 7600 / 18300 = 304/183.
    Exact arithmetic: tolerance 1e-12 relative."""
    cells = [(0, "ref", 1, 6), (0, "ref", 0, 4), (0, "foc", 1, 3), (0, "foc", 0, 7),
             (1, "ref", 1, 8), (1, "ref", 0, 2), (1, "foc", 1, 6), (1, "foc", 0, 4)]
    stratum, group, right = (np.repeat([c[k] for c in cells], [c[3] for c in cells]) for k in range(3))
    res = mantel_haenszel(pd.DataFrame({"q": right}), group, "foc", "ref", strata=stratum, min_group=10)
    row = res.table.iloc[0]
    assert row["alpha_mh"] == pytest.approx(37 / 12, rel=1e-12)
    assert row["delta_mh"] == pytest.approx(-2.35 * np.log(37 / 12), rel=1e-12)
    assert row["chi2_mh"] == pytest.approx(304 / 183, rel=1e-12)
    assert row["p_value"] == pytest.approx(sps.chi2.sf(304 / 183, 1), rel=1e-12)
    assert (row["n_focal"], row["n_reference"], row["ets_class"]) == (20, 20, "A")   # p = 0.197: not significant


def test_mh_reproduces_the_published_ucb_admissions_example():
    """A published worked example: R's `mantelhaen.test(UCBAdmissions)` (the R documentation's own example; the
    Berkeley 1973 graduate admissions of Bickel, Hammel & O'Connell 1975, Science 187, 398-404; six departments as
    strata; admitted = right, male = reference, female = focal). R prints a common odds ratio of 0.9046968 with 95%
    CI 0.7719074-1.0603298 (Robins-Breslow-Greenland) and, continuity-corrected, Mantel-Haenszel X-squared = 1.4269,
    p-value = 0.2323. Tolerances: the printed digits."""
    admissions = {"A": (512, 313, 89, 19), "B": (353, 207, 17, 8), "C": (120, 205, 202, 391),
                  "D": (138, 279, 131, 244), "E": (53, 138, 94, 299), "F": (22, 351, 24, 317)}
    right, group, dept = [], [], []
    for d, (m_yes, m_no, f_yes, f_no) in admissions.items():
        for sex, yes, no in (("male", m_yes, m_no), ("female", f_yes, f_no)):
            right += [1] * yes + [0] * no
            group += [sex] * (yes + no)
            dept += [d] * (yes + no)
    row = mantel_haenszel(pd.DataFrame({"admitted": right}), np.array(group), "female", "male",
                          strata=np.array(dept)).table.iloc[0]
    assert row["alpha_mh"] == pytest.approx(0.9046968, abs=5e-8)
    se_log = (np.log(1.0603298) - np.log(0.7719074)) / (2 * sps.norm.ppf(0.975))
    assert row["delta_se"] == pytest.approx(2.35 * se_log, abs=1e-6)
    assert row["chi2_mh"] == pytest.approx(1.4269, abs=5e-5)
    assert row["p_value"] == pytest.approx(0.2323, abs=5e-5)
    assert (row["n_focal"], row["n_reference"]) == (1835, 2691)


def test_mh_agrees_with_statsmodels_stratified_table():
    """Per item, the 2x2xK tables of our total-score strata given to StratifiedTable: alpha, SE of delta
    (2.35 x SE of ln alpha, Robins-Breslow-Greenland), continuity-corrected chi2 and p, to 1e-6 relative."""
    frame, group, _ = simulate(n=150, n_items=12, seed=3)
    res = mantel_haenszel(frame, group, "foc", "ref").table
    u, ref = frame.to_numpy(), group == "ref"
    codes, _ = score_strata(u.astype(float), np.ones(12, bool), np.zeros(len(u), np.int64))
    for i in range(12):
        st = stratified_table(u, ref, codes, i)
        test = st.test_null_odds(correction=True)
        row = res.iloc[i]
        assert row["alpha_mh"] == pytest.approx(st.oddsratio_pooled, rel=1e-6)
        assert row["delta_se"] == pytest.approx(2.35 * st.logodds_pooled_se, rel=1e-6)
        assert row["chi2_mh"] == pytest.approx(test.statistic, rel=1e-6)
        assert row["p_value"] == pytest.approx(test.pvalue, rel=1e-6)


def test_ets_classes_follow_zwick_and_the_interval_test():
    """Significant and |delta| < 1 -> A; 1 <= |delta| < 1.5 -> B; |delta| >= 1.5 -> C only when |delta| > 1 is
    significant (Paek & Holland: with SE 0.3 the p of H0 |delta| <= 1 at 1.7 is about Phi(-0.7/0.3) = 0.0098; with
    SE 0.5 about Phi(-1.4) = 0.081 -> B); not significant -> A; an infinite delta that is significant -> C."""
    delta = [0.5, -1.2, 1.7, -1.7, 2.0, -np.inf, np.nan]
    se = [0.2, 0.2, 0.3, 0.5, 0.9, np.nan, np.nan]
    p = [0.001, 0.001, 0.001, 0.001, 0.08, 0.001, np.nan]
    assert list(ets_class(delta, se, p)) == ["A", "B", "C", "B", "A", "C", "A"]
    assert sps.ncx2.sf((1.7 / 0.3) ** 2, 1, (1 / 0.3) ** 2) == pytest.approx(sps.norm.cdf(-0.7 / 0.3), abs=1e-4)


def test_mh_recovers_simulated_dif_and_keeps_the_nominal_rate():
    """Rasch items, focal group 0.5 lower (impact), items 0-3 harder for it by 0.8 logit, so delta = -2.35 x 0.8 =
    -1.88: over 10 seeded replications (purified) the mean delta is within 0.2 of it, at least 95% of the 40 DIF
    tests are flagged (p < .05 and after BH), and the 16 DIF-free items are flagged at p < .05 in at most 7% of
    their 160 tests (nominal 5%)."""
    deltas, hits, false_pos = [], 0, 0
    for rep in range(10):
        frame, group, _ = simulate(seed=100 + rep)
        t = mantel_haenszel(frame, group, "foc", "ref", purify=True).table
        deltas += list(t["delta_mh"].iloc[:4])
        hits += int(((t["p_value"] < 0.05) & t["flag_bh"]).iloc[:4].sum())
        false_pos += int((t["p_value"].iloc[4:] < 0.05).sum())
    assert np.mean(deltas) == pytest.approx(-1.88, abs=0.2)
    assert hits / 40 >= 0.95 and false_pos / 160 <= 0.07


def test_purification_drops_the_dif_items_from_the_score():
    frame, group, _ = simulate(n=800, shift=1.2, seed=7)
    res = mantel_haenszel(frame, group, "foc", "ref", purify=True)
    assert res.converged and res.iterations >= 2
    assert not set(res.anchor) & {"i00", "i01", "i02", "i03"} and len(res.anchor) >= 14
    assert mantel_haenszel(frame, group, "foc", "ref").anchor == tuple(frame.columns)


def test_mh_pinned_numbers():
    """Regression numbers of one seeded simulation (atol 1e-3), girth's style."""
    frame, group, _ = simulate(n=300, seed=11)
    t = mantel_haenszel(frame, group, "foc", "ref").table.set_index("item_id")
    np.testing.assert_allclose(t.loc[["i00", "i05"], ["delta_mh", "delta_se", "chi2_mh"]].to_numpy(),
                               PINNED_MH, atol=1e-3)


PINNED_MH = [[-1.857904, 0.458543, 15.797279], [0.267997, 0.510784, 0.169687]]


def test_groups_below_the_minimum_missing_answers_and_degenerate_items():
    frame, group, _ = simulate(n=30, seed=1)
    with pytest.raises(ValueError, match=f"at least {MIN_GROUP} persons per group: focal 'foc' has 19"):
        mantel_haenszel(frame.iloc[:49], group[:49], "foc", "ref")
    holes = frame.astype(float)
    holes.iloc[3, 2] = np.nan
    with pytest.raises(ValueError, match="'i02' has missing answers"):
        mantel_haenszel(holes, group, "foc", "ref")
    frame["i05"] = 1                                            # everybody right: no information, never a crash
    frame["i06"] = (group == "ref").astype(int)                 # reference all right, focal all wrong
    t = mantel_haenszel(frame, group, "foc", "ref").table.set_index("item_id")
    assert np.isnan(t.loc["i05", "alpha_mh"]) and t.loc["i05", "ets_class"] == "A"
    assert t.loc["i05", "note"].startswith("no stratum")
    assert t.loc["i06", "delta_mh"] == -np.inf and t.loc["i06", "ets_class"] == "C"
    assert t.loc["i06", "note"].startswith("delta infinite")
    assert t.drop(index=["i05"])[["chi2_mh", "p_value"]].notna().all().all()
