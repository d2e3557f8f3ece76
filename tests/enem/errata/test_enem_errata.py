"""INEP's errata (enem.errata, enem.errata.format): the shipped table, the zip / key / annul corrections on item
files, files that do not match an erratum's signature, the official scores they restore, a user's errata file,
estimated parameters marked as estimates, and the blank-sheet rule as data.

Fixtures: ITENS_PROVA_2017.csv holds INEP's published rows of 2017 MT booklets 403 and 404 (numbers copied from
../shared/reference/enem_inep, written in our layout); cases_2017_mt.jsonl five real candidates of those
booklets with INEP's score. The synthetic errata are built on the golden booklet 1211."""
import dataclasses
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from paths import FIXTURES, SHARED

from mcqa_toolkit import enem
from mcqa_toolkit.enem.errata import ErrataWarning, Erratum, booklet_signature, errata, errata_table
from mcqa_toolkit.enem.errata import apply as errata_mod
from mcqa_toolkit.enem.errata import format as errata_format
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.reproducibility import EnemEstimatedParamsWarning
from mcqa_toolkit.enem.simulate import itens_prova_layout
from mcqa_toolkit.items import DatasetError

MT2017 = FIXTURES / "enem" / "ITENS_PROVA_2017.csv"
CASES = [json.loads(line) for line in (FIXTURES / "enem" / "cases_2017_mt.jsonl").read_text().splitlines()]
P = ["NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]
pytestmark = pytest.mark.filterwarnings("ignore::mcqa_toolkit.enem.reproducibility.EnemReproducibilityWarning")


def booklet(df, co):
    return df[df["CO_PROVA"] == co].sort_values("CO_POSICAO")


def test_the_shipped_table_says_what_each_entry_is():
    table = errata_table()
    assert table["id"].is_unique and set(table["kind"]) == {"zip", "key", "annul"}
    for e in errata():
        assert e.what and e.evidence and e.gain and e.year in (2011, 2013, 2017, 2019, 2021, 2025)
        if e.kind == "zip":
            assert len(e.signature) == 16 and e.reference_booklet and (e.not_scored or e.unpublished)
        else:
            assert e.co_item and len(e.published_params) == 3 and e.published_key
        for u in e.unpublished:            # the items INEP scored with parameters it never published
            assert {"a", "b", "c", "estimated", "n_candidates", "independent_check", "cross_validation"} <= set(u)
    assert {u["co_item"] for e in errata() for u in e.unpublished} == {73305, 117798}


def test_zip_correction_on_2017_mt():
    """Item 82352 (position 14 of booklet 404) was not scored by INEP though not flagged: from it on each row
    carries the next item's parameters; undone per CO_ITEM, in booklet 403 too."""
    published = read_itens_prova(MT2017, errata=False)
    fixed = read_itens_prova(MT2017)
    assert fixed.attrs["errata"][4].startswith("2017-MT-zip: applied") and fixed["NU_ANO"].iloc[0] == 2017
    before, after = booklet(published, 404), booklet(fixed, 404)
    assert after.loc[after["CO_ITEM"] == 82352, "IN_ITEM_ABAN"].item() == 1
    assert np.isnan(after.loc[after["CO_ITEM"] == 82352, P].to_numpy()).all()
    np.testing.assert_array_equal(after[P].to_numpy()[:13], before[P].to_numpy()[:13])        # before the item
    np.testing.assert_array_equal(after[P].to_numpy()[14:], before[P].to_numpy()[13:44])      # one row later
    assert not (before[P].to_numpy()[44] == after[P].to_numpy()).all(axis=1).any()            # filler dropped
    assert set(after["ERRATUM"]) == {"2017-MT-zip"} and set(booklet(published, 404)["ERRATUM"]
                                                              if "ERRATUM" in published else [""]) == {""}
    other = booklet(fixed, 403).set_index("CO_ITEM")                                         # same items, other order
    np.testing.assert_array_equal(other.loc[after["CO_ITEM"], P].to_numpy(), after[P].to_numpy())


def test_the_correction_restores_inep_scores():
    fixed, published = read_itens_prova(MT2017), read_itens_prova(MT2017, errata=False)
    for case in CASES:
        got = enem.score_answers(case["answers"], booklet(fixed, case["CO_PROVA"]), "MT")
        raw = enem.score_answers(case["answers"], booklet(published, case["CO_PROVA"]), "MT")
        assert got.score == pytest.approx(case["NU_NOTA"], abs=0.05) and got.n_scored == 44
        assert abs(raw.score - case["NU_NOTA"]) > 1


def test_a_file_that_differs_from_the_signature_is_left_alone(tmp_path):
    rows = read_itens_prova(MT2017, errata=False)
    rows.loc[rows.index[rows["CO_ITEM"] == 40005], "NU_PARAM_B"] += 0.01     # INEP republished, say
    path = tmp_path / "ITENS_PROVA_2017.csv"
    itens_prova_layout(rows).to_csv(path, sep=";", index=False, encoding="latin-1")
    with pytest.warns(ErrataWarning, match="erratum 2017-MT-zip not applied: 2017 MT booklet 404 is not as published"):
        got = read_itens_prova(path)
    np.testing.assert_array_equal(got[P].to_numpy(), rows[P].to_numpy())
    assert set(got["ERRATUM"]) == {""}
    other_year = tmp_path / "ITENS_PROVA_2018.csv"                        # another year's file: not concerned
    itens_prova_layout(read_itens_prova(MT2017, errata=False)).to_csv(other_year, sep=";", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert set(read_itens_prova(other_year)["ERRATUM"]) == {""}
    unnamed = tmp_path / "items.csv"                                       # no year: the signature decides
    itens_prova_layout(read_itens_prova(MT2017, errata=False)).to_csv(unnamed, sep=";", index=False)
    assert read_itens_prova(unnamed)["ERRATUM"].eq("2017-MT-zip").sum() == 90


# ---- the rule mechanics, on synthetic errata over the golden booklet ---------------------------------------------

GOLDEN = FIXTURES / "enem" / "ITENS_PROVA_golden.csv"


def _with(monkeypatch, *entries):
    monkeypatch.setattr(errata_mod, "errata", lambda: tuple(entries))


def test_zip_with_an_item_scored_under_unpublished_parameters(monkeypatch, tmp_path):
    rows = booklet(read_itens_prova(GOLDEN, errata=False), 1211)
    codes = rows["CO_ITEM"].tolist()
    scored = rows[rows["IN_ITEM_ABAN"] == 0]["CO_ITEM"].tolist()
    q, free = scored[5], scored[10]
    e = Erratum(id="t-zip", kind="zip", year=2023, area="MT", what="w", evidence="e", reference_booklet=1211,
                not_scored=(q,), unpublished=({"co_item": free, "a": 1.5, "b": 0.5, "c": 0.2},),
                signature=booklet_signature(rows))
    _with(monkeypatch, e)
    path = tmp_path / "ITENS_PROVA_2023.csv"
    itens_prova_layout(read_itens_prova(GOLDEN, errata=False)).to_csv(path, sep=";", index=False)
    got = booklet(read_itens_prova(path), 1211).set_index("CO_ITEM")
    published = rows[rows["IN_ITEM_ABAN"] == 0][P].to_numpy()
    kept = [i for i in scored if i not in (q, free)]
    np.testing.assert_array_equal(got.loc[kept, P].to_numpy(), published[:len(kept)])
    assert got.loc[q, "IN_ITEM_ABAN"] == 1 and tuple(got.loc[free, P]) == (1.5, 0.5, 0.2)
    assert got.loc[free, "IN_ITEM_ABAN"] == 0 and len(codes) == len(got)


def test_key_and_annul_errata_in_some_booklets(monkeypatch, tmp_path):
    items = read_itens_prova(GOLDEN, errata=False)
    r = booklet(items, 1211).iloc[3]
    params = tuple(float(r[p]) for p in P)
    new_key = "A" if r["TX_GABARITO"] != "A" else "B"
    key = Erratum(id="t-key", kind="key", year=2023, area="MT", what="w", evidence="e", co_item=int(r["CO_ITEM"]),
                  published_key=r["TX_GABARITO"], correct_key=new_key, published_params=params)
    annul = dataclasses.replace(key, id="t-annul", kind="annul", booklets=(1211,), correct_key="")
    _with(monkeypatch, key)
    path = tmp_path / "ITENS_PROVA_2023.csv"
    itens_prova_layout(items).to_csv(path, sep=";", index=False)
    got = read_itens_prova(path)
    assert (got.loc[got["CO_ITEM"] == r["CO_ITEM"], "TX_GABARITO"] == new_key).all()
    assert got.attrs["errata"] == (f"t-key: applied (item {r['CO_ITEM']}: key {r['TX_GABARITO']} -> {new_key} "
                                   f"({(items['CO_ITEM'] == r['CO_ITEM']).sum()} rows))",)
    _with(monkeypatch, annul)
    got = read_itens_prova(path)
    assert got.loc[r.name, "IN_ITEM_ABAN"] == 1 and got.loc[r.name, "ERRATUM"] == "t-annul"
    third = next(k for k in "CDE" if k not in (new_key, r["TX_GABARITO"]))
    _with(monkeypatch, dataclasses.replace(key, published_key=third))                  # written for another key
    with pytest.warns(ErrataWarning, match=f"item {r['CO_ITEM']} is not as published"):
        assert read_itens_prova(path)["ERRATUM"].eq("").all()
    _with(monkeypatch, dataclasses.replace(key, correct_key=r["TX_GABARITO"]))          # already right
    assert "already corrected" in read_itens_prova(path).attrs["errata"][0]
    unnamed = tmp_path / "items.csv"                                                    # no year: say so
    itens_prova_layout(items).to_csv(unnamed, sep=";", index=False)
    _with(monkeypatch, key)
    with pytest.warns(ErrataWarning, match="its year is unknown"):
        assert read_itens_prova(unnamed)["ERRATUM"].eq("").all()
    assert read_itens_prova(unnamed, year=2023)["ERRATUM"].eq("t-key").any()


# ---- on INEP's files (../shared beside the checkout, as in CI) ---------------------------------------------------

def test_every_erratum_applies_to_the_file_it_was_written_for():
    inep = SHARED / "reference" / "enem_inep"
    assert inep.is_dir(), f"{inep}: INEP's development files are expected beside the checkout (as in CI)"
    for year in sorted({e.year for e in errata()}):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ErrataWarning)
            got = read_itens_prova(inep / f"ITENS_PROVA_{year}.csv")
        status = dict(s.split(": ", 1) for s in got.attrs["errata"])
        for e in errata():
            assert status[e.id].startswith("applied" if e.year == year else "not in this file"), (year, e.id)
        assert pd.api.types.is_integer_dtype(got["IN_ITEM_ABAN"])


# ---- a user's errata file (the format of enem.errata.format) ---------------------------------------------------------

def test_a_users_errata_file_replaces_the_shipped_one(tmp_path):
    rows = read_itens_prova(MT2017, errata=False)
    r = booklet(rows, 404).iloc[3]
    mine = Erratum(id="mine", kind="key", year=2017, area="MT", co_item=int(r["CO_ITEM"]),
                   published_key=r["TX_GABARITO"], correct_key="A" if r["TX_GABARITO"] != "A" else "B",
                   published_params=tuple(float(r[p]) for p in P), source="discovered")
    path = tmp_path / "mine.json"
    path.write_text(errata_format.errata_json([mine], "test"))
    assert errata_format.load_errata(path) == (mine,)
    for table in (path, str(path), (mine,)):
        got = read_itens_prova(MT2017, errata=table)
        assert got.attrs["errata"][0].startswith("mine: applied") and len(got.attrs["errata"]) == 1
        assert set(got["ERRATUM"]) == {"", "mine"}                  # the shipped 2017-MT-zip is not applied
        np.testing.assert_array_equal(got[P].to_numpy(), rows[P].to_numpy())
        assert not got["BLANK_ALL_WRONG"].any()                     # nor any shipped rule


@pytest.mark.parametrize("entry,field,match", [
    ({"kind": "typo"}, "kind", "'typo'; expected one of"),
    ({"year": "2017"}, "year", "expected an integer"),
    ({"correct_key": "F"}, "correct_key", "expected one of"),
    ({"published_params": [0, 1, 0.2]}, "published_params", "a > 0"),
    ({"colour": "blue"}, "colour", "unknown field"),
    ({"co_item": None}, "co_item", "missing"),
])
def test_a_bad_errata_file_names_the_entry_and_field(tmp_path, entry, field, match):
    ok = {"id": "k", "kind": "key", "year": 2017, "area": "MT", "co_item": 1, "published_key": "A",
          "correct_key": "B", "published_params": [1.0, 0.0, 0.2]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"errata": [ok, {**ok, "id": "k2", **entry}]}))
    with pytest.raises(DatasetError, match=match) as e:
        read_itens_prova(MT2017, errata=path)
    assert (e.value.record, e.value.field, e.value.path) == (2, field, str(path))
    path.write_text("{not json")
    with pytest.raises(DatasetError, match="not a JSON errata file"):
        errata_format.load_errata(path)


# ---- estimates said as estimates; the blank-sheet rule as data (on INEP's files, as in CI) -------------------------

def test_estimated_parameters_are_marked_and_warned_once():
    inep = SHARED / "reference" / "enem_inep"
    rows = read_itens_prova(inep / "ITENS_PROVA_2011.csv")
    assert set(rows.loc[rows["PARAMS_ESTIMATED"], "CO_ITEM"]) == {73305}
    assert not read_itens_prova(inep / "ITENS_PROVA_2011.csv", errata=False)["PARAMS_ESTIMATED"].any()
    case = next(c for c in json.loads((inep / "inep_cases_dev.json").read_text()) if c["co_prova"] == "121")
    with pytest.warns(EnemEstimatedParamsWarning, match="ESTIMATED item parameters .*: 2011 CN item 73305") as caught:
        got = enem.score_answers(case["respostas"], booklet(rows, 121), "CN")
    assert len([w for w in caught if w.category is EnemEstimatedParamsWarning]) == 1
    assert got.score == pytest.approx(float(case["nota_oficial"]), abs=0.15)
    for e in errata():
        for u in e.unpublished:                 # the objective the fit minimises, its held-out check, the comparison
            assert "unrounded score" in u["estimated"] and "round(" not in u["estimated"]
            assert "held-out candidates exact" in u["cross_validation"]
            assert "does not start from them" in u["independent_check"]
    for e in errata() + errata_mod.rules():
        assert e.source in ("discovered", "hand") and (e.source == "discovered" or e.reason)


def test_the_blank_sheet_rule_is_data():
    inep = SHARED / "reference" / "enem_inep"
    assert read_itens_prova(inep / "ITENS_PROVA_2013.csv")["BLANK_ALL_WRONG"].all()
    assert not read_itens_prova(inep / "ITENS_PROVA_2013.csv", errata=False)["BLANK_ALL_WRONG"].any()
    assert not read_itens_prova(inep / "ITENS_PROVA_2017.csv")["BLANK_ALL_WRONG"].any()
    assert {(r.year, r.area) for r in errata_mod.rules()} == {(2013, a) for a in ("CH", "CN", "LC", "MT")}
    unnamed = read_itens_prova(GOLDEN)                          # year unknown: the rows cannot say
    assert unnamed["BLANK_ALL_WRONG"].isna().all()
