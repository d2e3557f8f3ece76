"""The reproducibility table shipped with the package (enem.reproducibility): lookups, one warning per call
with the measured agreement, the results column, the docs generated from it, and (on ../shared, as in CI)
that the shipped numbers are what `validate-enem` measures on the development set."""
import json
import warnings

import pandas as pd
import pytest
from paths import FIXTURES, REPO, SHARED
from test_enem_official import write_microdata

from mcqa_toolkit import enem
from mcqa_toolkit.enem.errata import errata_markdown
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.reproducibility import (
    REPRODUCED_AT,
    EnemNotValidatedWarning,
    EnemReproducibilityWarning,
    agreement,
    markdown_table,
    reproducibility_table,
)
from mcqa_toolkit.enem.validate import validate_enem

ITEMS_2017 = FIXTURES / "enem" / "ITENS_PROVA_2017.csv"
CASES = [json.loads(line) for line in (FIXTURES / "enem" / "cases_2017_mt.jsonl").read_text().splitlines()]


def test_lookups():
    assert agreement(2017, "MT").status == "reproduced" and agreement(2017, "MT", 404).share_exact == 1.0
    flagged = agreement(2013, "MT", 190)
    assert flagged.status == "not reproduced" and flagged.share_exact == 0.0
    assert "booklet 190: INEP's official scores are NOT reproduced (0 of 10" in flagged.text
    assert "two item sets" in flagged.text
    assert agreement(2013, "MT", 179).status == "reproduced"                  # its regular booklets are exact
    area_only = agreement(2017, "MT", 443)                                     # no case of this booklet
    assert area_only.status == "reproduced" and "booklet 443 has no development case" in area_only.text
    assert agreement(2023, "MT").status == "not validated" and "covers 2011, 2013" in agreement(2023, "MT").text
    assert agreement(None, "CN").status == "not validated" and agreement(None, "CN").share_exact is None


def test_the_table_flags_what_is_below_the_threshold_with_a_cause():
    t = reproducibility_table()
    assert set(t["status"]) == {"reproduced", "not reproduced"}
    assert ((t["share_exact"] >= REPRODUCED_AT) == (t["status"] == "reproduced")).all()
    flagged = t[t["status"] == "not reproduced"]
    assert flagged["cause"].str.len().gt(30).all() and not flagged["cause"].str.contains("not diagnosed").any()
    areas = t[t["booklet"] == "all"]
    assert areas["n_exact"].sum() / areas["n_cases"].sum() >= 0.95          # the bar, on 2,140 cases
    assert set(areas.loc[areas["status"] == "not reproduced", "year"]) == {2013}


def test_docs_show_the_tables_generated_from_the_data():
    """docs/enem.md's tables are written by studies/enem_reproducibility.py from the shipped data, not by hand."""
    docs = (REPO / "docs" / "enem.md").read_text(encoding="utf-8")
    assert markdown_table() in docs and errata_markdown() in docs


def test_scoring_a_flagged_exam_warns_once_per_call_with_the_agreement():
    items = read_itens_prova(ITEMS_2017)
    rows = items[items["CO_PROVA"] == 404]
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                         # 2017 MT: reproduced, silent
        got = enem.score_answers(CASES[0]["answers"], rows, "MT")
    assert (got.inep_validation, got.inep_share_exact) == ("reproduced", 1.0)
    with pytest.warns(EnemReproducibilityWarning) as caught:
        flagged = enem.score_answers(CASES[0]["answers"], rows.assign(CO_PROVA=190), "MT", year=2013)
    assert len(caught) == 1 and "ENEM 2013 MT booklet 190" in str(caught[0].message)
    assert "0 of 10 INEP development cases exact to 0.1 (0%)" in str(caught[0].message)
    assert (flagged.inep_validation, flagged.inep_share_exact) == ("not reproduced", 0.0)
    with pytest.warns(EnemNotValidatedWarning, match="ENEM 2023 MT: not validated against INEP") as caught:
        other = enem.score_answers(CASES[0]["answers"], rows, "MT", year=2023)
    assert len(caught) == 1 and other.inep_validation == "not validated" and other.inep_share_exact is None


def test_microdata_results_carry_the_column_and_one_warning(tmp_path):
    """Many candidates, two booklets, one flagged: one warning for the whole call."""
    path = tmp_path / "ITENS_PROVA_2013.csv"
    items = pd.read_csv(ITEMS_2017, sep=";", dtype=str)
    items.assign(CO_PROVA=items["CO_PROVA"].replace({"404": "190", "403": "179"})).to_csv(path, sep=";", index=False)
    rows = [dict(NU_INSCRICAO=i, TP_PRESENCA_MT=1, CO_PROVA_MT=co, NU_NOTA_MT=500.0, TX_RESPOSTAS_MT=c["answers"],
                 TX_GABARITO_MT="") for i, (c, co) in enumerate([(c, 190) for c in CASES[:3]] * 4 +
                                                                   [(c, 179) for c in CASES[3:]] * 4)]
    write_microdata(tmp_path / "MICRODADOS_ENEM_2013.csv", rows, "MT")
    with pytest.warns(EnemReproducibilityWarning) as caught:
        out = enem.score_microdata(tmp_path / "MICRODADOS_ENEM_2013.csv", path, "MT", chunksize=5)
    assert len(caught) == 1 and "booklet 190" in str(caught[0].message) and "179" not in str(caught[0].message)
    by = out.groupby("CO_PROVA")[["inep_validation", "inep_share_exact"]].first()
    assert by.loc[190].tolist() == ["not reproduced", 0.0] and by.loc[179].tolist() == ["reproduced", 1.0]


def test_no_notebook_computes_official_scores():
    """`make every official-score notebook say so`: none computes them today (this fails when one starts to)."""
    for nb in (REPO / "notebooks").glob("*.ipynb"):
        text = nb.read_text(encoding="utf-8")
        assert "score_answers" not in text and "score_microdata" not in text, nb.name


def test_the_shipped_numbers_are_what_validate_enem_measures_on_the_development_set(tmp_path):
    inep = SHARED / "reference" / "enem_inep"
    assert inep.is_dir(), f"{inep}: INEP's development set is expected beside the checkout (as in CI)"
    now = validate_enem(inep, inep / "inep_cases_dev.json", tmp_path / "now", progress=False)
    before = validate_enem(inep, inep / "inep_cases_dev.json", tmp_path / "before", progress=False, errata=False)
    shipped = reproducibility_table().set_index(["year", "area", "booklet"])
    measured = now.reproducibility.set_index(["year", "area", "booklet"])
    assert sorted(shipped.index) == sorted(measured.index)
    cols = ["n_cases", "n_exact", "n_within_1", "status"]
    pd.testing.assert_frame_equal(shipped.loc[measured.index, cols], measured[cols], check_dtype=False)
    published = before.reproducibility.set_index(["year", "area", "booklet"])["n_exact"]
    assert (shipped.loc[published.index, "n_exact_as_published"] == published).all()
