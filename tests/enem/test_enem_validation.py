"""`mcqa validate-enem`: the agreement table against hand counts and against the known truth of synthetic
INEP-format microdata (enem.simulate), chunk-size invariance, the figure, and one-line CLI errors."""
import re

import numpy as np
import pandas as pd
import pytest
from figure_checks import _check_figure
from test_enem_item_sets import key_string, two_sets, write_itens_prova
from test_enem_official import CASES, ITEMS, write_microdata

from mcqa_toolkit import cli
from mcqa_toolkit.enem.agreement import add_counts, agreement_counts, area_summary, problem_counts, validation_table
from mcqa_toolkit.enem.simulate import OFFSETS, simulate_microdata, two_set_booklet
from mcqa_toolkit.enem.validate import validate_enem
from mcqa_toolkit.report import plots

# constructed booklets in files without a year: "not validated against INEP" is expected (see
# test_enem_reproducibility.py)
pytestmark = pytest.mark.filterwarnings("ignore::mcqa_toolkit.enem.reproducibility.EnemNotValidatedWarning")

BOOKLETS = {"CN": [1221], "CH": [1055], "LC": [1201, 1065, 9691], "MT": [1211, 9187]}


def _scores(errors, area="MT", co=1211, rule="single"):
    nota = np.array([500.0 + e if e is not None else np.nan for e in errors])
    return pd.DataFrame({"area": area, "CO_PROVA": co, "item_set": 1, "item_set_rule": rule,
                         "score": 500.0, "NU_NOTA": nota})


def test_agreement_bands_and_running_totals():
    errors = [0.0, 0.04, -0.1, 0.5, -1.0, 1.2, 2.0, -2.1, 7.5, None]
    got = agreement_counts(_scores(errors)).iloc[0]
    assert (got["n_scored"], got["n_compared"], got["n_exact"], got["n_within_1"],
            got["n_within_2"]) == (10, 9, 2, 5, 7)
    assert got["max_abs_error"] == pytest.approx(7.5) and got["sum_abs_error"] == pytest.approx(14.44)
    parts = [agreement_counts(_scores(errors[i:i + 3])) for i in range(0, 10, 3)]
    total = None
    for part in parts:
        total = add_counts(total, part)
    pd.testing.assert_frame_equal(total, agreement_counts(_scores(errors)))
    table = validation_table(total, None, 2023)
    row = table.iloc[0]
    assert (row["status"], row["share_exact"], row["share_within_2"]) == ("ok", 2 / 9, 7 / 9)
    assert row["mean_abs_error"] == pytest.approx(14.44 / 9) and row["year"] == 2023


def test_problems_become_table_rows_and_area_summary():
    counts = agreement_counts(pd.concat([_scores([0.0, 3.0]), _scores([0.0], area="CN", co=1221)]))
    problems = problem_counts(pd.DataFrame({
        "area": ["MT", "MT", "LC"], "CO_PROVA": ["99", "99", "7"],
        "problem": ["absent from item file"] * 2 + ["key mismatch"],
        "detail": ["row 4: first", "row 9: later", "row 2: x"], "n_rows": [3, 2, 5], "first_row": [4, 9, 2]}))
    table = validation_table(counts, problems, None)
    assert table[["area", "CO_PROVA", "status", "n_candidates"]].values.tolist() == [
        ["CN", "1221", "ok", 1], ["LC", "7", "key mismatch", 5], ["MT", "1211", "ok", 2],
        ["MT", "99", "absent from item file", 5]]
    assert table.loc[3, "detail"] == "row 4: first" and np.isnan(table.loc[3, "share_exact"])
    summary = area_summary(table).set_index("area")
    assert summary.loc["MT", ["n_candidates", "n_unusable"]].tolist() == [2, 5]
    assert summary.loc["MT", "share_exact"] == 0.5 and summary.loc["LC", "n_candidates"] == 0
    assert np.isnan(summary.loc["LC", "share_exact"])


# ---- end to end on synthetic microdata with known answers --------------------------------------------------------

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    d = tmp_path_factory.mktemp("enem_validation")
    items = pd.concat([ITEMS, two_set_booklet(ITEMS[ITEMS["CO_PROVA"] == 1211], 9187),
                       two_set_booklet(ITEMS[ITEMS["CO_PROVA"] == 1201], 9691)], ignore_index=True)
    write_itens_prova(d / "ITENS_PROVA_2023.csv", items)
    md, truth = simulate_microdata(items, BOOKLETS, 3000, np.random.default_rng(7), perturb=0.05, unusable=0.01)
    md.to_csv(d / "MICRODADOS_ENEM_2023.csv", sep=";", index=False, encoding="latin-1")
    return d, truth


def _expected(truth):
    ok = truth[truth["problem"] == ""].assign(err=lambda t: t["offset"].abs())
    g = ok.groupby(["area", "CO_PROVA", "item_set"])["err"]
    return pd.DataFrame({"n_candidates": g.size(), "share_exact": g.apply(lambda e: (e < 0.05).mean()),
                         "share_within_1": g.apply(lambda e: (e <= 1 + 1e-6).mean()),
                         "share_within_2": g.apply(lambda e: (e <= 2 + 1e-6).mean()), "max_abs_error": g.max()})


@pytest.fixture(scope="module")
def validated(synthetic):
    d, _ = synthetic
    return validate_enem(d / "ITENS_PROVA_2023.csv", d / "MICRODADOS_ENEM_2023.csv", d / "out", chunksize=700,
                         progress=False)


def test_validation_matches_the_synthetic_truth(synthetic, validated, tmp_path):
    d, truth = synthetic
    res = validated
    assert res.year == 2023 and res.n_rows == 3000
    scored = res.table[res.table["status"] == "ok"].assign(CO_PROVA=lambda t: t["CO_PROVA"].astype(int),
                                                           item_set=lambda t: t["item_set"].astype(int))
    got = scored.set_index(["area", "CO_PROVA", "item_set"])[list(_expected(truth).columns)]
    want = _expected(truth)
    pd.testing.assert_frame_equal(got.sort_index().astype(float), want.sort_index().astype(float), atol=1e-9,
                                  check_names=False)
    assert set(scored.loc[scored["CO_PROVA"].isin([9187, 9691]), "item_set_rule"]) == {"key"}
    assert 0.9 < scored["share_exact"].min() < 1 and scored["max_abs_error"].max() == pytest.approx(max(OFFSETS))
    bad = res.table[res.table["item_set_rule"] == ""].assign(CO_PROVA=lambda t: t["CO_PROVA"].astype(int))
    want_bad = truth[truth["problem"] != ""].groupby(["area", "CO_PROVA", "problem"]).size()
    assert bad.set_index(["area", "CO_PROVA", "status"])["n_candidates"].sort_index().tolist() == \
        want_bad.sort_index().tolist()
    assert {f.suffix for f in res.files} == {".csv", ".parquet"} and all(f.exists() for f in res.files)  # the CLI draws
    pd.testing.assert_frame_equal(pd.read_parquet(res.files[1]).drop(columns="item_set"),
                                  res.table.drop(columns="item_set"), check_dtype=False)
    again = validate_enem(d / "ITENS_PROVA_2023.csv", d / "MICRODADOS_ENEM_2023.csv", tmp_path,
                          chunksize=100_000, progress=False)        # one chunk: the same table
    pd.testing.assert_frame_equal(again.table.drop(columns="detail"), res.table.drop(columns="detail"))


def test_cli_prints_the_table_and_writes_files(synthetic, tmp_path, capsys):
    d, _ = synthetic
    code = cli.main(["validate-enem", str(d / "ITENS_PROVA_2023.csv"), str(d / "MICRODADOS_ENEM_2023.csv"),
                     "--out", str(tmp_path), "--area", "MT", "--chunksize", "1000"])
    out = capsys.readouterr().out
    assert code == 0 and "ENEM 2023 score validation: 3,000 microdata rows" in out
    assert "9187" in out and "absent from item file" in out and " LC " not in out
    assert (tmp_path / "enem_validation_2023.png").exists() and (tmp_path / "enem_validation_2023_areas.csv").exists()


def test_undetermined_item_sets_are_reported_per_set(tmp_path):
    rows, s1, s2 = two_sets(1211, 9189)
    write_itens_prova(tmp_path / "IP.csv", rows)
    cand = {"TP_PRESENCA_MT": 1, "CO_PROVA_MT": 9189, "TX_RESPOSTAS_MT": CASES[0]["answers"], "TX_GABARITO_MT": "",
            "NU_NOTA_MT": CASES[0]["score"]}                       # no key; INEP's score is set 1's
    write_microdata(tmp_path / "MICRODADOS_ENEM_2013.csv", [cand | {"NU_INSCRICAO": i} for i in range(3)], "MT")
    res = validate_enem(tmp_path / "IP.csv", tmp_path / "MICRODADOS_ENEM_2013.csv", tmp_path, progress=False)
    t = res.table
    assert t["status"].tolist() == ["undetermined: scored under each item set"] * 2 and res.year == 2013
    assert t["item_set"].tolist() == [1, 2] and t["share_exact"].tolist() == [1.0, 0.0]
    assert t["n_candidates"].tolist() == [3, 3]
    assert key_string(s1) != key_string(s2)


def test_figure_house_style(validated):
    res = validated
    fig = plots.score_agreement(res.table)
    panels = _check_figure(fig, 4)
    assert [ax.get_title() for ax in panels] == ["CH", "CN", "LC", "MT"]
    labels = [t.get_text() for t in panels[3].get_yticklabels()]
    assert "9187 · set 2" in labels and any(lb.startswith("99999: absent from item file") for lb in labels)
    assert panels[3].get_xlim()[0] > 0.8                           # zoomed to where the shares are
    with pytest.raises(ValueError, match="table lacks column"):
        plots.score_agreement(res.table.drop(columns="share_exact"))


@pytest.mark.parametrize("files,match", [
    (("missing.csv", "MICRODADOS_ENEM_2023.csv"), "missing.csv: no such file"),
    (("ITENS_PROVA_2023.csv", "ITENS_PROVA_2023.csv"), "field 'TX_RESPOSTAS_<area>': no such column"),
    (("MICRODADOS_ENEM_2023.csv", "MICRODADOS_ENEM_2023.csv"), "expected a ';'-separated INEP ITENS_PROVA file|"
                                                                "missing column"),
    (("bad_params.csv", "MICRODADOS_ENEM_2023.csv"), "bad_params.csv: record 1: field 'NU_PARAM_A'"),
    (("ITENS_PROVA_2023.csv", "empty.csv"), "empty.csv: empty file"),
])
def test_cli_bad_input_is_one_line(synthetic, tmp_path, capsys, files, match):
    d, _ = synthetic
    (d / "bad_params.csv").write_text("CO_POSICAO;SG_AREA;CO_ITEM;TX_GABARITO;IN_ITEM_ABAN;NU_PARAM_A;NU_PARAM_B;"
                                      "NU_PARAM_C;CO_PROVA\n136;MT;1;A;0;abc;0;0.2;1211\n")
    (d / "empty.csv").write_text("")
    code = cli.main(["validate-enem", *(str(d / f) for f in files), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("mcqa: error: ")
    assert re.search(match, err[0]), err[0]
