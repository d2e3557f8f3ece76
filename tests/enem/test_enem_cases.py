"""Case lists (enem.cases): real candidates with INEP's score, read under either field naming, scored year by
year, and validated with `mcqa validate-enem ITEMS CASES.json`; cases of every year (2009 LC: 45 answers, no
foreign language); a bad case is named by record and field while the others are scored (strict refuses)."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from paths import FIXTURES

from mcqa_toolkit import cli
from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS
from mcqa_toolkit.enem.cases import CasesLeftOutWarning, item_files, read_case_list, read_cases, score_cases
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.simulate import itens_prova_layout
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
        read_cases(tmp_path / "c.json", strict=True)
    assert (e.value.record, e.value.field) == (2, field)
    with pytest.warns(CasesLeftOutWarning, match=f"record 2 \\(no id\\): field '{field}': .*{match}"):
        assert read_cases(tmp_path / "c.json").index.tolist() == [1]        # the others are read


def test_score_cases_against_the_item_file(tmp_path):
    got = score_cases(CASES, ITEMS)
    assert (got["error"].abs() < 0.05).all() and (got["item_set_rule"] == "single").all()
    assert got["inep_validation"].unique().tolist() == ["reproduced"] and got["problem"].eq("").all()
    raw = score_cases(CASES, ITEMS, errata=False)                            # the item file as INEP published it
    assert (raw["error"].abs() > 1).all()
    assert score_cases(CASES, {2017: ITEMS})["score"].tolist() == got["score"].tolist()
    bad = read_cases(CASES).assign(CO_PROVA=9999)
    out = score_cases(bad, ITEMS)
    assert out["score"].isna().all() and out["problem"].str.match(
        r"absent from item file: record \d: field 'co_prova': booklet CO_PROVA_MT = 9999 is not in").all()


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


GOLDEN = FIXTURES / "enem" / "ITENS_PROVA_golden.csv"


def naive_score(answers: str, rows: pd.DataFrame, area: str) -> float:
    """INEP's score written out item by item (3PL, D = 1, EAP on 40 points of [-4, 4] with N(0, 1) weights)."""
    points = np.linspace(-4, 4, 40)
    lik = np.exp(-points ** 2 / 2)
    for mark, r in zip(answers, rows.sort_values("CO_POSICAO").itertuples(), strict=True):
        if r.IN_ITEM_ABAN == 0:
            p = r.NU_PARAM_C + (1 - r.NU_PARAM_C) / (1 + np.exp(-r.NU_PARAM_A * (points - r.NU_PARAM_B)))
            lik = lik * (p if mark == r.TX_GABARITO else 1 - p)
    k, d = ENEM_CONSTANTS[area]
    return round(k * float(lik @ points / lik.sum()) + d, 1)


@pytest.fixture
def every_year(tmp_path):
    """A folder with an LC booklet in INEP's 2009 layout (45 items, no TP_LINGUA column; our numbers) and the 2017
    fixture, and a case list over both years with four bad records among good ones."""
    golden = read_itens_prova(GOLDEN, errata=False)
    lc = golden[golden["SG_AREA"] == "LC"]
    lc = lc[(lc["CO_PROVA"] == lc["CO_PROVA"].iloc[0]) & (lc["TP_LINGUA"].fillna(0) == 0)].sort_values(
        ["TP_LINGUA", "CO_POSICAO"])
    lc = lc.assign(CO_PROVA=51, CO_POSICAO=range(91, 91 + len(lc)), TP_LINGUA=np.nan)
    assert len(lc) == 45
    itens_prova_layout(lc).drop(columns="TP_LINGUA").to_csv(tmp_path / "ITENS_PROVA_2009.csv", sep=";", index=False)
    (tmp_path / "ITENS_PROVA_2017.csv").write_bytes(ITEMS.read_bytes())
    rng = np.random.default_rng(2009)
    lc2009 = ["".join(rng.choice(list("ABCDE"), 45)) for _ in range(3)]
    cases = [{"ano": 2009, "area": "LC", "co_prova": "51", "respostas": a, "nota_oficial": naive_score(a, lc, "LC"),
              "case_id": f"lc2009-{i}"} for i, a in enumerate(lc2009)]
    cases += [json.loads(line) for line in CASES.read_text().splitlines()]
    mt = cases[3]
    cases += [{**mt, "id": "no-language", "area": "LC"},           # an LC case of 2017 needs its language
              {**mt, "id": "bad-booklet", "CO_PROVA": "4x4"},
              {**mt, "id": "absent", "CO_PROVA": 9999},          # readable, but the item file has no such booklet
              {**mt, "id": "short", "answers": mt["answers"][:40]}]
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    return tmp_path


def test_cases_of_every_year_are_scored_and_bad_ones_named(every_year):
    """2009 LC (no foreign language) is read and scored; each bad case is named by record and field and the
    others are still scored; strict=True refuses the first instead. Fails before issue 41: the 2009 LC case
    stopped the whole file ("an LC case needs its foreign language")."""
    got = read_case_list(every_year / "cases.json")
    assert [(r.record, r.item_id, r.field) for r in got.left_out] == [(9, "no-language", "tp_lingua"),
                                                                      (10, "bad-booklet", "co_prova")]
    assert "only 2009 had none" in got.left_out[0].reason
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scored = score_cases(every_year / "cases.json", every_year)
    assert scored.index.tolist() == list(range(1, 13))
    good = scored[scored["problem"] == ""]
    assert good["case"].tolist() == ["lc2009-0", "lc2009-1", "lc2009-2", *[f"mt2017-{i}" for i in range(1, 6)]]
    assert (good["error"].abs() < 0.05).all() and good.loc[[1, 2, 3], "n_scored"].eq(45).all()
    problems = scored.loc[[9, 10, 11, 12], "problem"].tolist()
    assert problems[0].startswith("bad case: record 9: field 'tp_lingua': an LC case of 2010 or later")
    assert problems[1].startswith("bad case: record 10: field 'co_prova': booklet '4x4' is not a number")
    assert problems[2].startswith("absent from item file: record 11: field 'co_prova': booklet")
    assert problems[3].startswith("answer string length: record 12: field 'respostas': answer string has 40")
    assert scored.loc[[9, 10, 11, 12], "score"].isna().all()
    with pytest.raises(DatasetError, match="needs its foreign language") as e:
        score_cases(every_year / "cases.json", every_year, strict=True)
    assert (e.value.record, e.value.field) == (9, "tp_lingua")
    with pytest.raises(DatasetError, match="absent from item file") as e, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        score_cases(got.cases, every_year, strict=True)                  # the readable ones: a scoring problem
    assert (e.value.record, e.value.field) == (11, "co_prova")


def test_validate_enem_names_bad_cases_and_scores_the_others(every_year, capsys):
    assert cli.main(["validate-enem", str(every_year), str(every_year / "cases.json"),
                     "--out", str(every_year / "v")]) == 0
    out = capsys.readouterr().out
    assert "8 of 8 scores equal NU_NOTA at 0.1" in out
    for text in ("bad case: record 9: field 'tp_lingua'", "bad case: record 10: field 'co_prova'",
                 "absent from item file: record 11: field 'co_prova'",
                 "answer string length: record 12: field 'respostas'"):
        assert text in out
    per_case = pd.read_csv(every_year / "v" / "enem_validation_cases_cases.csv")
    assert per_case["problem"].notna().sum() == 4
    assert cli.main(["validate-enem", str(every_year), str(every_year / "cases.json"), "--out",
                     str(every_year / "w"), "--strict"]) == 2
    assert "cases.json: record 9: field 'tp_lingua'" in capsys.readouterr().err


def test_strict_names_a_case_the_scorer_left_unscored_without_a_problem(monkeypatch):
    """A case left unscored with no scorer problem ("not scored") is a DatasetError naming its record under
    strict=True, not a TypeError from the unmatched problem text."""
    monkeypatch.setattr("mcqa_toolkit.enem.cases.ChunkScorer.area", lambda self, chunk, area: ([], []))
    assert (score_cases(CASES, ITEMS)["problem"] == "not scored").all()
    with pytest.raises(DatasetError, match="not scored") as e:
        score_cases(CASES, ITEMS, strict=True)
    assert e.value.record == 1
