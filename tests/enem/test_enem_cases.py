"""Case lists (enem.cases): real candidates with INEP's score, read under either field naming, scored year by
year, and validated with `mcqa validate-enem ITEMS CASES.json`."""
import json

import pandas as pd
import pytest
from paths import FIXTURES

from mcqa_toolkit import cli
from mcqa_toolkit.enem.cases import item_files, read_cases, score_cases
from mcqa_toolkit.enem.validate import validate_enem
from mcqa_toolkit.items import DatasetError

ITEMS = FIXTURES / "enem" / "ITENS_PROVA_2017.csv"
CASES = FIXTURES / "enem" / "cases_2017_mt.jsonl"


def test_read_cases_under_either_naming(tmp_path):
    got = read_cases(CASES)
    assert list(got.columns) == ["case", "year", "area", "CO_PROVA", "TP_LINGUA", "answers", "NU_NOTA", "key"]
    assert got["case"].tolist()[:2] == ["mt2017-1", "mt2017-2"] and got.index.tolist() == [1, 2, 3, 4, 5]
    assert got["year"].unique().tolist() == [2017] and got["TP_LINGUA"].isna().all()
    # the development set's naming: strings for numbers, Portuguese field names
    mine = [{"ano": 2017, "area": "mt", "tp_lingua": "1", "co_prova": "404", "nota_oficial": "584.6",
             "respostas": "cacbdeacecece" + "A" * 32, "case_id": "x-1"}]
    (tmp_path / "c.json").write_text(json.dumps(mine))
    row = read_cases(tmp_path / "c.json").iloc[0]
    assert (row["area"], row["CO_PROVA"], row["TP_LINGUA"], row["NU_NOTA"], row["case"]) == ("MT", 404, 1, 584.6, "x-1")
    assert row["answers"].startswith("CACBDE")
    (tmp_path / "d.json").write_text(json.dumps({"cases": mine}))
    assert len(read_cases(tmp_path / "d.json")) == 1


@pytest.mark.parametrize("change,field,match", [
    ({"nota_oficial": None}, "nota_oficial", "missing official"),
    ({"co_prova": "4x4"}, "co_prova", "booklet '4x4' is not a number"),
    ({"area": "XX"}, "area", "unknown area 'XX'"),
    ({"area": "LC", "tp_lingua": ""}, "tp_lingua", "needs its foreign language"),
    ({"respostas": 12}, "respostas", "expected a string"),
])
def test_bad_cases_name_record_and_field(tmp_path, change, field, match):
    ok = {"ano": "2017", "area": "MT", "tp_lingua": "0", "co_prova": "404", "nota_oficial": "500.0",
          "respostas": "A" * 45}
    (tmp_path / "c.json").write_text(json.dumps([ok, ok | change]))
    with pytest.raises(DatasetError, match=match) as e:
        read_cases(tmp_path / "c.json")
    assert (e.value.record, e.value.field) == (2, field)


def test_score_cases_against_the_item_file(tmp_path):
    got = score_cases(CASES, ITEMS)
    assert (got["error"].abs() < 0.05).all() and (got["item_set_rule"] == "single").all()
    assert got["inep_validation"].unique().tolist() == ["reproduced"] and got["problem"].eq("").all()
    raw = score_cases(CASES, ITEMS, errata=False)                            # the item file as INEP published it
    assert (raw["error"].abs() > 1).all()
    assert score_cases(CASES, {2017: ITEMS})["score"].tolist() == got["score"].tolist()
    bad = read_cases(CASES).assign(CO_PROVA=9999)
    out = score_cases(bad, ITEMS)
    assert out["score"].isna().all() and out["problem"].eq("absent from item file").all()


def test_item_files_by_year(tmp_path):
    (tmp_path / "ITENS_PROVA_2017.csv").write_bytes(ITEMS.read_bytes())
    assert item_files(tmp_path, [2017]) == {2017: tmp_path / "ITENS_PROVA_2017.csv"}
    with pytest.raises(FileNotFoundError, match=r"year\(s\) \[2019\]"):
        item_files(tmp_path, [2017, 2019])
    with pytest.raises(ValueError, match="one item file for cases of"):
        item_files(ITEMS, [2017, 2019])
    with pytest.raises(ValueError, match="one item file"):
        item_files(ITEMS, [2019])


def test_validate_enem_on_a_case_list(tmp_path, capsys):
    res = validate_enem(ITEMS, CASES, tmp_path / "out", progress=False)
    assert res.reproducibility[["booklet", "n_cases", "n_exact", "status"]].values.tolist() == [
        ["all", 5, 5, "reproduced"], ["403", 2, 2, "reproduced"], ["404", 3, 3, "reproduced"]]
    names = {f.name for f in res.files}
    assert {"enem_validation_cases_2017_mt.csv", "enem_reproducibility_cases_2017_mt.csv",
            "enem_validation_cases_2017_mt_cases.csv"} <= names
    shipped_format = pd.read_csv(tmp_path / "out" / "enem_reproducibility_cases_2017_mt.csv")
    assert list(shipped_format.columns[:5]) == ["year", "area", "booklet", "n_cases", "n_exact"]
    assert cli.main(["validate-enem", str(ITEMS), str(CASES), "--out", str(tmp_path / "cli"), "--as-published"]) == 0
    out = capsys.readouterr().out
    assert "ENEM case-list validation: 5 cases" in out and "0 of 5 scores equal NU_NOTA at 0.1" in out
