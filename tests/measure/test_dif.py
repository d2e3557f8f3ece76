"""DIF: Mantel-Haenszel (hand example, R's published UCBAdmissions example, statsmodels' StratifiedTable, ETS classes, purification, permutation within
blocks), logistic regression (statsmodels' Logit), the IRT residual test with fixed parameters, Benjamini-Hochberg,
and the persons of language models built from records. Recovery on seeded simulated DIF plus pinned numbers."""
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from builders import records
from scipy import stats as sps
from statsmodels.stats.contingency_tables import StratifiedTable
from statsmodels.stats.multitest import multipletests

from mcqa_toolkit import irt
from mcqa_toolkit.measure import (MIN_GROUP, bh_adjust, dif_persons, ets_class, irt_dif, logistic_dif,
                                  mantel_haenszel, mh_permutation)
from mcqa_toolkit.measure.dif import permuted_labels, score_strata
from mcqa_toolkit.measure.dif_models import loo_eap, nagelkerke


def _simulate(n=500, n_items=20, shift=0.8, dif=(0, 1, 2, 3), impact=-0.5, seed=0, a=None, c=None, a_focal=None):
    """Seeded reference (theta ~ N(0, 1)) and focal (N(impact, 1)) groups, b ~ U(-1.5, 1.5); the `dif` items are
    `shift` harder for the focal group (b + shift); a_focal: the focal group's discriminations (non-uniform DIF)."""
    rng = np.random.default_rng(seed)
    a = np.ones(n_items) if a is None else a
    c = np.zeros(n_items) if c is None else c
    b = rng.uniform(-1.5, 1.5, n_items)                         # no item so extreme that it has no power
    b_f = b.copy()
    b_f[list(dif)] += shift
    u_r = irt.simulate_3pl(rng.normal(0, 1, n), a, b, c, rng)
    u_f = irt.simulate_3pl(rng.normal(impact, 1, n), a if a_focal is None else a_focal, b_f, c, rng)
    frame = pd.DataFrame(np.vstack([u_r, u_f]).astype(int), columns=[f"i{k:02d}" for k in range(n_items)])
    return frame, np.array(["ref"] * n + ["foc"] * n), pd.DataFrame({"a": a, "b": b, "c": c}, index=frame.columns)


# ---- Mantel-Haenszel --------------------------------------------------------------------------------------------
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


def _stratified_table(u, ref, codes, i):
    """statsmodels' StratifiedTable of item i over the strata `codes`, leaving out strata of one person (they carry
    no information and make its variance 0/0)."""
    tables = [[[(u[m & ref, i] == 1).sum(), (u[m & ref, i] == 0).sum()],
               [(u[m & ~ref, i] == 1).sum(), (u[m & ~ref, i] == 0).sum()]]
              for s in np.unique(codes[:, i]) if (m := codes[:, i] == s).sum() > 1]
    return StratifiedTable(np.moveaxis(np.array(tables, dtype=float), 0, -1))


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
    frame, group, _ = _simulate(n=150, n_items=12, seed=3)
    res = mantel_haenszel(frame, group, "foc", "ref").table
    u, ref = frame.to_numpy(), group == "ref"
    codes, _ = score_strata(u.astype(float), np.ones(12, bool), np.zeros(len(u), np.int64))
    for i in range(12):
        st = _stratified_table(u, ref, codes, i)
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
        frame, group, _ = _simulate(seed=100 + rep)
        t = mantel_haenszel(frame, group, "foc", "ref", purify=True).table
        deltas += list(t["delta_mh"].iloc[:4])
        hits += int(((t["p_value"] < 0.05) & t["flag_bh"]).iloc[:4].sum())
        false_pos += int((t["p_value"].iloc[4:] < 0.05).sum())
    assert np.mean(deltas) == pytest.approx(-1.88, abs=0.2)
    assert hits / 40 >= 0.95 and false_pos / 160 <= 0.07


def test_purification_drops_the_dif_items_from_the_score():
    frame, group, _ = _simulate(n=800, shift=1.2, seed=7)
    res = mantel_haenszel(frame, group, "foc", "ref", purify=True)
    assert res.converged and res.iterations >= 2
    assert not set(res.anchor) & {"i00", "i01", "i02", "i03"} and len(res.anchor) >= 14
    assert mantel_haenszel(frame, group, "foc", "ref").anchor == tuple(frame.columns)


def test_mh_pinned_numbers():
    """Regression numbers of one seeded simulation (atol 1e-3), girth's style."""
    frame, group, _ = _simulate(n=300, seed=11)
    t = mantel_haenszel(frame, group, "foc", "ref").table.set_index("item_id")
    np.testing.assert_allclose(t.loc[["i00", "i05"], ["delta_mh", "delta_se", "chi2_mh"]].to_numpy(),
                               PINNED_MH, atol=1e-3)


PINNED_MH = [[-1.857904, 0.458543, 15.797279], [0.267997, 0.510784, 0.169687]]


def test_groups_below_the_minimum_missing_answers_and_degenerate_items():
    frame, group, _ = _simulate(n=30, seed=1)
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
    frame, group, _ = _simulate(n=200, n_items=10, shift=1.5, dif=(0,), seed=9)
    within = np.tile(["m1", "m2"], 200)
    t = mh_permutation(frame, group, "foc", "ref", within, n_permutations=999, seed=2).table
    assert t["p_perm"].iloc[0] == pytest.approx(1 / 1000) and t["flag_bh"].iloc[0]
    u, is_ref = frame.to_numpy(), group == "ref"
    codes, _ = score_strata(u.astype(float), np.ones(10, bool), (within == "m2").astype(np.int64))
    uncorrected = [_stratified_table(u, is_ref, codes, i).test_null_odds(correction=False).pvalue for i in range(10)]
    np.testing.assert_allclose(t["p_perm"].iloc[1:], uncorrected[1:], atol=0.05)
    assert (t["p_perm"].iloc[1:] < t["p_value"].iloc[1:]).all()
    again = mh_permutation(frame, group, "foc", "ref", within, n_permutations=999, seed=2).table
    np.testing.assert_array_equal(again["p_perm"], t["p_perm"])


# ---- Benjamini-Hochberg -----------------------------------------------------------------------------------------
def test_bh_by_hand_and_as_statsmodels():
    """p = (.01, .04, .03, .20): sorted .01 .03 .04 .20 -> p m / rank = .04 .06 .0533 .20 -> running minimum from
    the top = .04 .0533 .0533 .20, back in input order; NaN stays NaN and is not counted (m = 4)."""
    p = [0.01, 0.04, 0.03, 0.20, np.nan]
    np.testing.assert_allclose(bh_adjust(p), [0.04, 0.16 / 3, 0.16 / 3, 0.2, np.nan], rtol=1e-12)
    np.testing.assert_allclose(bh_adjust(p)[:4], multipletests(p[:4], method="fdr_bh")[1], rtol=1e-12)


# ---- logistic regression ----------------------------------------------------------------------------------------
def test_logistic_agrees_with_statsmodels_logit():
    """LR statistics and Nagelkerke R^2 changes against statsmodels' Logit fitted here (1e-6)."""
    frame, group, _ = _simulate(n=200, n_items=8, seed=4)
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
    frame, group, _ = _simulate(n=500, shift=1.0, dif=(0, 1, 2), a=a, a_focal=a_f, seed=21)
    anchor = mantel_haenszel(frame, group, "foc", "ref", purify=True).anchor
    assert anchor == tuple(f"i{k:02d}" for k in range(4, 20))
    t = logistic_dif(frame, group, "foc", "ref", anchor=anchor).table
    assert (t["p_uniform"].iloc[:3] < 0.01).all() and t["p_nonuniform"].iloc[3] < 0.01
    assert (t["p_value"].iloc[4:] < 0.05).sum() <= 2
    assert set(t["effect"]) <= {"A", "B", "C"} and (t["note"] == "").all()
    strict = logistic_dif(frame, group, "foc", "ref", anchor=anchor, effect_size="zumbo-thomas").table
    assert (strict["effect"] <= t["effect"]).all()          # higher thresholds never give a larger class
    false_pos = sum(int((logistic_dif(*_simulate(n=300, dif=(), seed=200 + rep)[:2], "foc", "ref").table["p_value"]
                         < 0.05).sum()) for rep in range(5))
    assert false_pos / 100 <= 0.07


def test_logistic_within_blocks_and_separation():
    frame, group, _ = _simulate(n=100, n_items=6, seed=8)
    within = np.repeat(["m1", "m2", "m3", "m4"], 50)
    frame["i05"] = (within == "m2").astype(int)                  # one block always right: separation
    frame["i04"] = 0
    t = logistic_dif(frame, group, "foc", "ref", within=within).table.set_index("item_id")
    assert t.loc["i05", "note"].startswith("separation") and np.isfinite(t.loc["i05", "chi2_dif"])
    assert t.loc["i04", "note"].startswith("every person") and np.isnan(t.loc["i04", "p_value"])


# ---- IRT with fixed parameters ----------------------------------------------------------------------------------
def test_loo_eap_is_the_eap_without_the_studied_item():
    frame, _, params = _simulate(n=40, n_items=8, seed=2)
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
    frame, group, params = _simulate(n=500, shift=1.0, a=rng.uniform(0.8, 2.0, 20), c=np.full(20, 0.2), seed=31)
    t = irt_dif(frame, group, "foc", "ref", params).table
    assert (t["residual_diff"].iloc[:4] < -0.05).all() and t["flag_bh"].iloc[:4].all()
    assert (t["p_value"].iloc[4:] < 0.05).sum() <= 2
    pinned = irt_dif(frame.iloc[::5], group[::5], "foc", "ref", params).table.set_index("item_id")
    np.testing.assert_allclose(pinned.loc["i00", ["residual_diff", "se", "z"]].to_numpy(float), PINNED_IRT, atol=1e-3)
    with pytest.raises(ValueError, match="no IRT parameters"):
        irt_dif(frame, group, "foc", "ref", params.iloc[1:])


PINNED_IRT = [-0.120016, 0.066017, -1.817958]


# ---- persons of language models ---------------------------------------------------------------------------------
def _language_records():
    """Two models x two languages x 3 shuffles on items q1-q4 (parallel ids p1-p4); q5 exists in English only."""
    rows = []
    for model in ("m1", "m2"):
        for lang in ("en", "pt"):
            for s in range(3):
                for k in range(1, 5 + (lang == "en")):
                    right = (k + s + (model == "m2") + (lang == "pt")) % 3 != 0
                    rows.append({"item_id": f"q{k}-{lang}", "parallel_id": f"p{k}", "model": model, "language": lang,
                                 "shuffle": s, "choice": 0 if right else 1})
    return records(rows)


def test_persons_are_shuffles_matched_on_parallel_id():
    p = dif_persons(_language_records(), focal="pt", reference="en")
    assert p.responses.shape == (12, 4) and list(p.responses.columns) == ["p1", "p2", "p3", "p4"]
    assert p.dropped == ("p5",)                                  # asked in English only
    assert list(p.persons.columns) == ["model", "strategy", "language", "shuffle"]
    assert (p.group == p.persons["language"]).all() and set(p.block) == {"m1 / S1", "m2 / S1"}
    assert p.to_frame().shape == (12, 8)
    row = p.to_frame().query("model == 'm1' and language == 'pt' and shuffle == 0").iloc[0]
    assert [row[f"p{k}"] for k in range(1, 5)] == [1, 0, 1, 1]   # right when (k + 0 + 0 + 1) % 3 != 0


def test_persons_by_majority_and_errors():
    rec = _language_records()
    p = dif_persons(rec, focal="pt", reference="en", rule="majority")
    assert p.responses.shape == (4, 4) and "shuffle" not in p.persons
    with pytest.raises(ValueError, match="no record with language"):
        dif_persons(rec, focal="es", reference="en")
    with pytest.raises(ValueError, match="empty parallel_id"):
        dif_persons(rec.assign(parallel_id=""), focal="pt", reference="en")
    with pytest.raises(ValueError, match="rule"):
        dif_persons(rec, focal="pt", reference="en", rule="mean")
    with pytest.raises(ValueError, match="at least 20 persons per group"):
        mantel_haenszel(p.responses, p.group, "pt", "en", within=p.block)
