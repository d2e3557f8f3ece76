"""Every value of irt_reference.json (mirt figures and hand-checked ones), within its stated tolerance."""
import json
import warnings

import numpy as np
import pytest
from paths import FIXTURES

from mcqa_toolkit import enem, irt
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.reproducibility import EnemNotValidatedWarning

REF = json.loads((FIXTURES / "irt_reference.json").read_text())
MIRT_GRID = irt.normal_grid(121, -6.0, 6.0)[0]


@pytest.fixture(autouse=True)
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _patterns(strings):
    return np.array([[int(ch) for ch in s] for s in strings], dtype=float)


def _lsat7():
    ref = REF["lsat7_2pl"]
    a = np.array(ref["a"])
    return ref, a, irt.b_from_intercept(a, ref["d"])


def test_lsat7_eap_by_sum_score_lord_wingersky():
    ref, a, b = _lsat7()
    exp = ref["eap_by_sum_score"]
    est = irt.ability_eap_sum_score(a, b, grid=MIRT_GRID)
    np.testing.assert_allclose(est.theta, exp["theta"], atol=exp["tolerance"])
    np.testing.assert_allclose(est.psd, exp["psd"], atol=exp["tolerance"])


@pytest.mark.parametrize("case", REF["lsat7_2pl"]["pattern_cases"]["cases"], ids=lambda c: c["pattern"])
def test_lsat7_pattern_cases(case):
    ref, a, b = _lsat7()
    tol = ref["pattern_cases"]["tolerance"]
    u = _patterns([case["pattern"]])
    eap = irt.ability_eap(u, a, b, grid=MIRT_GRID)
    assert eap.theta[0] == pytest.approx(case["eap"], abs=tol)
    assert irt.person_fit_lz(u, eap.theta, a, b)[0] == pytest.approx(case["lz_at_eap"], abs=tol)
    assert irt.standard_error(eap.theta[0], a, b) == pytest.approx(case["inv_sqrt_info_at_eap"], abs=tol)
    mp = irt.ability_map(u, a, b, prior_mean=0.0, prior_sd=1.0)
    assert mp.theta[0] == pytest.approx(case["map"], abs=tol)
    lzs = irt.person_fit_lz_star(u, mp.theta, a, b, method="map", prior_mean=0.0, prior_sd=1.0)
    assert lzs[0] == pytest.approx(case["lzstar_at_map"], abs=tol)


def test_lsat7_map_matches_mirt():
    ref = REF["lsat7_map_mirt"]
    a = np.array(ref["a"])
    est = irt.ability_map(_patterns(ref["patterns"]), a, irt.b_from_intercept(a, ref["d"]))
    np.testing.assert_allclose(est.theta, ref["map"], atol=ref["tolerance"])


def test_rasch_ml_matches_mirt_including_infinities():
    ref = REF["rasch_ml_mirt"]
    b = irt.b_from_intercept(ref["a_all"], ref["d"])
    est = irt.ability_ml(_patterns(list(ref["cases"])), ref["a_all"], b)
    expected = [float(v) for v in ref["cases"].values()]     # "-inf"/"+inf" parse to infinities
    finite = np.isfinite(expected)
    np.testing.assert_allclose(est.theta[finite], np.array(expected)[finite], atol=ref["tolerance"])
    assert list(est.theta[~finite]) == [-np.inf, np.inf]
    assert np.all(np.isinf(est.psd[~finite]))


@pytest.mark.parametrize("D,key", [(1.0, "test_information_D1"), (1.702, "test_information_D1702")])
def test_3pl_test_information(D, key):
    ref = REF["info_3pl"]
    info = irt.test_information(np.array(ref["theta"]), ref["a"], ref["b"], ref["c"], D=D)
    np.testing.assert_allclose(info, ref[key], atol=ref["tolerance"])


# ENEM official scores --------------------------------------------------------------------------------
ENEM = REF["enem"]
ITEMS = read_itens_prova(FIXTURES / "enem" / "ITENS_PROVA_golden.csv")


@pytest.mark.parametrize("case", ENEM["cases"], ids=lambda c: f"{c['area']}-{c['co_prova']}-{c['score']}")
def test_enem_golden_cases(case):
    booklet = ITEMS[ITEMS["CO_PROVA"] == case["co_prova"]]
    with pytest.warns(EnemNotValidatedWarning, match=f"ENEM {case['year']} {case['area']}: not validated"):
        got = enem.score_answers(case["answers"], booklet, case["area"], case["tp_lingua"], year=case["year"])
    assert got.theta == pytest.approx(case["theta"], abs=ENEM["theta_tolerance"])
    assert got.score == pytest.approx(case["score"], abs=0.05)


def test_enem_mt_1211_extremes():
    booklet = ITEMS[ITEMS["CO_PROVA"] == 1211].sort_values("CO_POSICAO")
    key = booklet["TX_GABARITO"].tolist()
    right = "".join(k if k in "ABCDE" else "A" for k in key)
    wrong = "".join("B" if k == "A" else "A" for k in key)
    exp = ENEM["extremes_mt_1211"]
    with pytest.warns(EnemNotValidatedWarning):          # 2023: not in the reproducibility table
        top = enem.score_answers(right, booklet, "MT", year=2023)
        low = enem.score_answers(wrong, booklet, "MT", year=2023)
    assert top.theta == pytest.approx(exp["all_correct"]["theta"], abs=ENEM["theta_tolerance"])
    assert top.psd == pytest.approx(exp["all_correct"]["psd"], abs=5e-4)
    assert top.score == pytest.approx(exp["all_correct"]["score"], abs=0.05)
    assert low.theta == pytest.approx(exp["all_wrong_nonblank"]["theta"], abs=ENEM["theta_tolerance"])
    assert low.score == pytest.approx(exp["all_wrong_nonblank"]["score"], abs=0.05)


def test_enem_method_constants_are_the_reference_ones():
    assert {k: tuple(v) for k, v in ENEM["method"]["constants"].items()} == enem.ENEM_CONSTANTS
