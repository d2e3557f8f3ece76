"""Official ENEM scoring: golden cases, LC foreign-language layouts, blank booklets, bad input, microdata."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from paths import FIXTURES

from mcqa_toolkit import enem
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.reproducibility import EnemNotValidatedWarning, EnemReproducibilityWarning
from mcqa_toolkit.items import DatasetError

ITEMS_CSV = FIXTURES / "enem" / "ITENS_PROVA_golden.csv"
ITEMS = read_itens_prova(ITEMS_CSV)
ENEM = json.loads((FIXTURES / "irt_reference.json").read_text())["enem"]
CASES = ENEM["cases"]


@pytest.fixture(autouse=True)
def _no_warnings():
    """No warning but the one saying these booklets (2022-2023, a file without a year in its name) were not
    validated against INEP (tests/enem/test_enem_reproducibility.py checks that one)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", EnemNotValidatedWarning)
        yield


def booklet(co):
    return ITEMS[ITEMS["CO_PROVA"] == co]


def key_string(co, lingua=None):
    """The booklet's key in INEP order: 50 characters for LC (English, Spanish, common)."""
    df = booklet(co).assign(_L=lambda d: d["TP_LINGUA"].fillna(9)).sort_values(["_L", "CO_POSICAO"])
    return "".join(df["TX_GABARITO"])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['area']}-{c['co_prova']}-{c['score']}")
def test_golden_cases(case):
    got = enem.score_answers(case["answers"], booklet(case["co_prova"]), case["area"], case["tp_lingua"])
    assert got.theta == pytest.approx(case["theta"], abs=1e-4)
    assert got.score == pytest.approx(case["score"], abs=0.05)
    assert 0 < got.psd < 1 and 0 <= got.n_correct <= got.n_scored <= 45


def test_annulled_items_are_dropped_and_marks_count_wrong():
    mt = CASES[0]
    got = enem.score_answers(mt["answers"], booklet(1211), "MT")
    assert got.n_scored == 43                                   # two annulled MT items
    key = key_string(1211)
    first_right = next(i for i, (x, k) in enumerate(zip(mt["answers"], key, strict=True)) if x == k)
    for mark in ".*":
        head, tail = mt["answers"][:first_right], mt["answers"][first_right + 1:]
        changed = head + mark + tail
        wrong = head + ("A" if key[first_right] != "A" else "B") + tail
        marked = enem.score_answers(changed, booklet(1211), "MT")
        assert marked.n_correct == got.n_correct - 1
        assert marked.theta == enem.score_answers(wrong, booklet(1211), "MT").theta
    assert enem.score_answers(mt["answers"].lower(), booklet(1211), "mt") == got


LC_CASES = [c for c in CASES if c["area"] == "LC"]


@pytest.mark.parametrize("case", LC_CASES, ids=lambda c: f"{c['co_prova']}-{c['tp_lingua']}")
def test_lc_50_character_strings_with_9_for_the_other_language(case):
    ans, lang = case["answers"], case["tp_lingua"]
    fifty = ans[:5] + "99999" + ans[5:] if lang == 0 else "99999" + ans
    expected = enem.score_answers(ans, booklet(case["co_prova"]), "LC", lang)
    assert enem.score_answers(fifty, booklet(case["co_prova"]), "LC", lang) == expected
    assert enem.score_answers(fifty, booklet(case["co_prova"]), "LC") == expected   # language inferred


def test_lc_45_needs_the_language_and_other_language_is_not_administered():
    case = CASES[4]
    with pytest.raises(ValueError, match="foreign_language"):
        enem.score_answers(case["answers"], booklet(1065), "LC")
    eng = enem.score_answers(case["answers"], booklet(1065), "LC", 0)
    spa = enem.score_answers(case["answers"], booklet(1065), "LC", 1)
    assert eng.n_scored == spa.n_scored == 45 and eng.theta != spa.theta
    with pytest.raises(ValueError, match="'9' must fill exactly one"):
        enem.score_answers("9" * 50, booklet(1065), "LC")


def test_blank_booklet_scores_zero():
    """INEP's rule in the reference (written for 2022-2023): a sheet with no answer at all scores 0."""
    blank = enem.score_answers("." * 45, booklet(1211), "MT")
    assert blank.score == 0.0 and blank.n_correct == 0 and np.isfinite(blank.theta)
    wrong = "".join("B" if k == "A" else "A" for k in key_string(1211))
    assert blank.theta == enem.score_answers(wrong, booklet(1211), "MT").theta   # all-wrong pattern
    assert enem.score_answers("." * 45, booklet(1065), "LC", 1).score == 0.0
    assert enem.score_answers("....." + "99999" + "." * 40, booklet(1065), "LC").score == 0.0
    assert enem.score_answers("." * 45, booklet(1211), "MT", year=2023).score == 0.0


def test_blank_booklet_in_2013_scores_as_all_wrong():
    """2013 is the exception the development set shows (INEP gave both 2013 blank sheets the all-wrong score,
    the errata's blank rule for 2013, enem.booklet.blank_scores_zero); other years keep the reference's 0."""
    all_wrong = ENEM["extremes_mt_1211"]["all_wrong_nonblank"]
    with pytest.warns(EnemReproducibilityWarning, match="ENEM 2013 MT: INEP's official scores are NOT reproduced"):
        got = enem.score_answers("." * 45, booklet(1211), "MT", year=2013)      # (a 2023 booklet, called 2013)
        starred = enem.score_answers("." * 44 + "*", booklet(1211), "MT", year=2013)   # not blank: all wrong
    assert got.score == pytest.approx(all_wrong["score"], abs=0.05) and got.n_correct == 0
    assert got.theta == pytest.approx(all_wrong["theta"], abs=1e-4) and starred.score == got.score
    assert enem.score_answers("." * 45, booklet(1211), "MT", year=2012).score == 0.0


@pytest.mark.parametrize("answers,area,co,match", [
    ("A" * 44, "MT", 1211, "44 characters but booklet 1211 has 45 items"),
    ("A" * 46, "LC", 1065, "46 characters"),
    ("A" * 45, "XX", 1211, "area = 'XX': unknown ENEM area"),
    ("A" * 20 + "F" + "A" * 24, "MT", 1211, "character b'F' at position 20"),
    ("A" * 45, "CN", 1211, "rows of area"),
])
def test_bad_input(answers, area, co, match):
    with pytest.raises(ValueError, match=match):
        enem.score_answers(answers, booklet(co), area, 0 if area == "LC" else None)


def test_more_than_one_booklet_is_refused():
    with pytest.raises(ValueError, match="holds 2 booklets"):
        enem.score_answers("A" * 45, ITEMS[ITEMS["CO_PROVA"].isin([1065, 1201])], "LC", 0)


# microdata -----------------------------------------------------------------------------------------------
def write_microdata(path, rows, area):
    """An INEP-format MICRODADOS file: ';'-separated latin-1 with extra columns around the area's ones."""
    cols = ["NU_INSCRICAO", "NO_MUNICIPIO_PROVA", "TP_PRESENCA_CN", f"TP_PRESENCA_{area}", f"CO_PROVA_{area}",
            f"NU_NOTA_{area}", f"TX_RESPOSTAS_{area}", "TP_LINGUA", f"TX_GABARITO_{area}"]
    if area == "CN":
        cols.remove("TP_PRESENCA_CN")
    df = pd.DataFrame(rows).reindex(columns=cols).astype(object).fillna("")
    df["NO_MUNICIPIO_PROVA"] = "São João d'Aliança"
    df.to_csv(path, sep=";", index=False, encoding="latin-1")


def test_score_microdata_mt_streams_and_skips_absent(tmp_path):
    key = key_string(1211)
    rows = [dict(NU_INSCRICAO=i, TP_PRESENCA_MT=1, CO_PROVA_MT=1211, NU_NOTA_MT=c["score"],
                 TX_RESPOSTAS_MT=c["answers"], TX_GABARITO_MT=key)
            for i, c in enumerate(c for c in CASES if c["area"] == "MT")]
    rows.insert(1, dict(NU_INSCRICAO=9, TP_PRESENCA_MT=0, CO_PROVA_MT=1211))          # absent
    rows.append(dict(NU_INSCRICAO=10, TP_PRESENCA_MT=2, CO_PROVA_MT=1211))            # eliminated
    rows.append(dict(NU_INSCRICAO=11, TP_PRESENCA_MT=1, CO_PROVA_MT=1211, NU_NOTA_MT=0.0,
                     TX_RESPOSTAS_MT="." * 45, TX_GABARITO_MT=key))                    # blank booklet
    rows.append(dict(NU_INSCRICAO=12, TP_PRESENCA_MT=1, CO_PROVA_MT=1211, NU_NOTA_MT=958.6,
                     TX_RESPOSTAS_MT="".join(k if k in "ABCDE" else "A" for k in key), TX_GABARITO_MT=key))
    path = tmp_path / "MICRODADOS_ENEM_2023.csv"
    write_microdata(path, rows * 3, "MT")
    out = enem.score_microdata(path, ITEMS_CSV, "MT", chunksize=4)
    assert len(out) == 3 * 4
    assert list(out.columns[:6]) == ["CO_PROVA", "TP_LINGUA", "theta", "psd", "score", "NU_NOTA"]
    assert not (out.index.to_numpy() % 6 == 1).any()                                   # absent rows skipped
    np.testing.assert_allclose(out["score"], out["NU_NOTA"], atol=0.05)
    golden = out.iloc[:2]
    np.testing.assert_allclose(golden["theta"], [CASES[0]["theta"], CASES[1]["theta"]], atol=1e-4)


def test_score_microdata_lc_45_and_50_character_strings(tmp_path):
    rows = []
    for c in LC_CASES:
        ans, lang, key = c["answers"], c["tp_lingua"], key_string(c["co_prova"])
        fifty = ans[:5] + "99999" + ans[5:] if lang == 0 else "99999" + ans
        for s in (ans, fifty):
            rows.append(dict(NU_INSCRICAO=len(rows), TP_PRESENCA_LC=1, CO_PROVA_LC=c["co_prova"],
                             NU_NOTA_LC=c["score"], TX_RESPOSTAS_LC=s, TP_LINGUA=lang, TX_GABARITO_LC=key))
    rows.append(dict(NU_INSCRICAO=99, TP_PRESENCA_LC=0, CO_PROVA_LC="", TP_LINGUA=""))
    path = tmp_path / "MICRODADOS_ENEM_2022.csv"
    write_microdata(path, rows, "LC")
    out = enem.score_microdata(path, ITEMS_CSV, "LC", chunksize=3)
    assert len(out) == 6
    np.testing.assert_allclose(out["score"], out["NU_NOTA"], atol=0.05)
    assert out["TP_LINGUA"].tolist() == [0, 0, 1, 1, 1, 1]


def test_score_microdata_other_areas_and_errors(tmp_path):
    rows = [dict(NU_INSCRICAO=0, TP_PRESENCA_CN=1, CO_PROVA_CN=1221, NU_NOTA_CN=CASES[2]["score"],
                 TX_RESPOSTAS_CN=CASES[2]["answers"], TX_GABARITO_CN=key_string(1221))]
    path = tmp_path / "m.csv"
    write_microdata(path, rows, "CN")
    got = enem.score_microdata(path, ITEMS_CSV, "CN")
    assert got["score"].iloc[0] == pytest.approx(CASES[2]["score"], abs=0.05)
    with pytest.raises(ValueError, match=r"missing column\(s\) \['TX_RESPOSTAS_CH'"):
        enem.score_microdata(path, ITEMS_CSV, "CH")
    bad_key = key_string(1221)[:3] + ("A" if key_string(1221)[3] != "A" else "B") + key_string(1221)[4:]
    write_microdata(path, [rows[0] | dict(TX_GABARITO_CN=bad_key)], "CN")
    with pytest.raises(ValueError, match="booklet 1221: TX_GABARITO_CN says .* for item 3"):
        enem.score_microdata(path, ITEMS_CSV, "CN")
    write_microdata(path, [rows[0] | dict(CO_PROVA_CN=4321)], "CN")
    with pytest.raises(DatasetError, match="m.csv: record 1: field 'CO_PROVA_CN': booklet CO_PROVA_CN = 4321 is not in "
                                           "item_params_csv"):  # record: the 1-based data row
        enem.score_microdata(path, ITEMS_CSV, "CN")
    write_microdata(path, [rows[0] | dict(TX_RESPOSTAS_CN="A" * 40)], "CN")
    with pytest.raises(ValueError, match="40 characters"):
        enem.score_microdata(path, ITEMS_CSV, "CN")
