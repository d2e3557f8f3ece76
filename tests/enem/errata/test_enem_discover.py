"""Errata from data (enem.errata.discover, enem.errata.greedy, enem.errata.search, enem.errata.estimate,
enem.errata.sample): INEP's known errors planted in an item file are found from the candidates' official scores, written
in the errata format and applied; the K rule; microdata sampled in bounded memory; on one real exam-area (2017 MT) the
procedure finds the shipped erratum.

Planted data: candidates simulated (enem.simulate) on the golden booklets' real parameters (the truth), the item
file published with a zip in MT 1211, a wrong key in CN 1221 and an item of CH 1055 scored but published flagged
without parameters. Every test here fails on the code before discovery existed (no enem.errata.discover, no
--discover-errata)."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from paths import FIXTURES, SHARED

from mcqa_toolkit import cli, enem
from mcqa_toolkit.enem.cases import read_cases, score_cases
from mcqa_toolkit.enem.errata import ErrataWarning, errata
from mcqa_toolkit.enem.errata.discover import cross_validate, discover_cases, discover_errata
from mcqa_toolkit.enem.errata.format import booklet_signature, load_errata
from mcqa_toolkit.enem.errata.greedy import K
from mcqa_toolkit.enem.errata.sample import sample_microdata
from mcqa_toolkit.enem.itens_prova import read_itens_prova
from mcqa_toolkit.enem.reproducibility import EnemEstimatedParamsWarning
from mcqa_toolkit.enem.simulate import (
    itens_prova_layout,
    publish_key,
    publish_unpublished,
    publish_zip,
    simulate_microdata,
)
from mcqa_toolkit.enem.validate import validate_enem

GOLDEN = FIXTURES / "enem" / "ITENS_PROVA_golden.csv"
P = ["NU_PARAM_A", "NU_PARAM_B", "NU_PARAM_C"]
pytestmark = pytest.mark.filterwarnings("ignore::mcqa_toolkit.enem.reproducibility.EnemReproducibilityWarning")


def nth_scored(rows, co, k):
    return rows[(rows["CO_PROVA"] == co) & (rows["IN_ITEM_ABAN"] == 0)].sort_values("CO_POSICAO").iloc[k]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """(folder, true rows, planted) with ITENS_PROVA_2023.csv (published with the errors) and microdata."""
    d = tmp_path_factory.mktemp("planted")
    true = read_itens_prova(GOLDEN, errata=False)
    zip_item, key_row = int(nth_scored(true, 1211, 20)["CO_ITEM"]), nth_scored(true, 1221, 10)
    hidden = int(nth_scored(true, 1055, 30)["CO_ITEM"])
    true.loc[true["CO_ITEM"] == zip_item, ["IN_ITEM_ABAN", *P]] = [1, np.nan, np.nan, np.nan]
    wrong = "ABCDE"[("ABCDE".index(key_row["TX_GABARITO"]) + 2) % 5]
    published = publish_unpublished(publish_key(publish_zip(true, 1211, "MT", [zip_item]),
                                                int(key_row["CO_ITEM"]), wrong), hidden)
    itens_prova_layout(published).to_csv(d / "ITENS_PROVA_2023.csv", sep=";", index=False, encoding="latin-1")
    md, _ = simulate_microdata(true, {"CN": [1221], "CH": [1055], "MT": [1211]}, 400, np.random.default_rng(7),
                               unusable=0.0)
    md.to_csv(d / "MICRODADOS_ENEM_2023.csv", sep=";", index=False, encoding="latin-1")
    return d, true, {"zip": zip_item, "key": (int(key_row["CO_ITEM"]), key_row["TX_GABARITO"], wrong),
                     "hidden": hidden}


@pytest.fixture(scope="module")
def found(planted):
    d, _, _ = planted
    return discover_errata(d / "ITENS_PROVA_2023.csv", d / "MICRODADOS_ENEM_2023.csv", per_group=150, chunksize=97)


def test_the_planted_errors_are_found(planted, found):
    d, true, what = planted
    by_kind = {e.kind: e for e in found.entries}
    assert sorted((e.kind, e.area) for e in found.entries) == [("key", "CN"), ("zip", "CH"), ("zip", "MT")]
    zips = {e.area: e for e in found.entries if e.kind == "zip"}
    assert zips["MT"].reference_booklet == 1211 and zips["MT"].not_scored == (what["zip"],)
    published = read_itens_prova(d / "ITENS_PROVA_2023.csv", errata=False)
    assert zips["MT"].signature == booklet_signature(published[published["CO_PROVA"] == 1211])
    co, right, wrong = what["key"]
    key = by_kind["key"]
    assert (key.area, key.co_item, key.published_key, key.correct_key) == ("CN", co, wrong, right)
    (u,) = zips["CH"].unpublished                           # flagged without parameters, yet scored: an ESTIMATE
    truth = true.loc[true["CO_ITEM"] == what["hidden"], P].iloc[0].to_numpy()
    assert u["co_item"] == what["hidden"] and zips["CH"].not_scored == ()
    np.testing.assert_allclose([u["a"], u["b"], u["c"]], truth, atol=0.05)
    assert u["n_candidates"] == 150 and "held-out candidates exact" in u["cross_validation"]
    assert "unrounded" in u["estimated"]
    for e in found.entries:
        assert e.source == "discovered" and len(e.fixed) - len(e.broken) >= K and e.n_candidates >= 150
    assert (found.areas["exact_after"] > found.areas["exact_published"]).all()


def test_the_written_file_restores_the_scores(planted, found, tmp_path):
    d, true, what = planted
    path = found.write(tmp_path / "errata_2023.json")
    fixed = read_itens_prova(d / "ITENS_PROVA_2023.csv", errata=path)
    mt = fixed[fixed["CO_PROVA"] == 1211].set_index("CO_ITEM")
    want = true[true["CO_PROVA"] == 1211].set_index("CO_ITEM")
    np.testing.assert_array_equal(mt.loc[want.index, P].to_numpy(), want[P].to_numpy())
    assert set(fixed.loc[fixed["PARAMS_ESTIMATED"], "CO_ITEM"]) == {what["hidden"]}
    with pytest.warns(EnemEstimatedParamsWarning, match=f"2023 CH item {what['hidden']}") as caught:
        after = validate_enem(d / "ITENS_PROVA_2023.csv", d / "MICRODADOS_ENEM_2023.csv", tmp_path / "v",
                              chunksize=300, progress=False, errata=path)
    assert len([w for w in caught if w.category is EnemEstimatedParamsWarning]) == 1
    before = validate_enem(d / "ITENS_PROVA_2023.csv", d / "MICRODADOS_ENEM_2023.csv", tmp_path / "b",
                           chunksize=300, progress=False, errata=False)
    share = {s: v.summary.set_index("area")["share_exact"] for s, v in (("after", after), ("before", before))}
    assert (share["after"] > 0.93).all() and (share["before"].reindex(["CH", "MT"]) < 0.5).all()


def test_cli_discovers_writes_and_applies(tmp_path, capsys):
    """On the 2017 MT fixture (booklets 403-404, five real candidates): --discover-errata finds the zip."""
    items, cases = FIXTURES / "enem" / "ITENS_PROVA_2017.csv", FIXTURES / "enem" / "cases_2017_mt.jsonl"
    out = tmp_path / "found.json"
    assert cli.main(["validate-enem", str(items), str(cases), "--out", str(tmp_path / "v"),
                     "--discover-errata", str(out)]) == 0
    text = capsys.readouterr().out
    assert "errata discovery from the case list cases_2017_mt.jsonl" in text and "0 -> 5 of 5" in text
    assert "5 of 5 scores equal NU_NOTA at 0.1" in text
    (entry,) = json.loads(out.read_text())["errata"]
    assert (entry["reference_booklet"], entry["not_scored"]) == (404, [82352])
    assert cli.main(["validate-enem", str(items), str(cases), "--out", str(tmp_path / "w"), "--errata", str(out)]) == 0
    assert "5 of 5 scores equal NU_NOTA at 0.1" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"errata": [{**entry, "not_scored": ["x"]}]}))
    assert cli.main(["validate-enem", str(items), str(cases), "--errata", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcqa: error: ") and "bad.json: record 1: field 'not_scored'" in err


@pytest.mark.parametrize("n_informative", [1, 2])
def test_k_two_candidates_for_a_key_one_for_the_blank_rule(tmp_path, n_informative):
    """A key error only candidates who marked the published or the true key can show: with one such candidate it
    is no evidence (K = 2), with two it is found. One blank sheet whose NU_NOTA is the all-wrong score is enough
    for the blank rule (K_BLANK = 1)."""
    true = read_itens_prova(GOLDEN, errata=False)
    true = true[true["CO_PROVA"] == 1211]
    item = nth_scored(true, 1211, 5)
    right = item["TX_GABARITO"]
    wrong, third = ("ABCDE"[("ABCDE".index(right) + i) % 5] for i in (1, 2))
    published = true.assign(TX_GABARITO=true["TX_GABARITO"].where(true["CO_ITEM"] != item["CO_ITEM"], wrong))
    path = tmp_path / "ITENS_PROVA_2023.csv"
    itens_prova_layout(published).to_csv(path, sep=";", index=False)
    md, _ = simulate_microdata(true, {"MT": [1211]}, 40, np.random.default_rng(3), perturb=0.0, unusable=0.0)
    at = true.sort_values("CO_POSICAO")["CO_ITEM"].tolist().index(item["CO_ITEM"])
    answers = [a[:at] + (right if i < n_informative else third) + a[at + 1:]
               for i, a in enumerate(md.loc[md["TP_PRESENCA_MT"] == 1, "TX_RESPOSTAS_MT"])]
    answers.append("." * 45)
    nota = [enem.score_answers(a, true, "MT").score for a in answers[:-1]]
    nota.append(enem.score_answers("*" * 45, true, "MT").score)          # the all-wrong pattern's score, not 0
    cases = pd.DataFrame({"case": [f"c{i}" for i in range(len(answers) - 1)] + ["blank"], "year": 2023, "area": "MT",
                          "CO_PROVA": 1211, "TP_LINGUA": pd.array([pd.NA] * len(answers), "Int64"),
                          "answers": answers, "NU_NOTA": nota, "key": ""})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = discover_cases(cases, path)
    kinds = {e.kind: e for e in got.entries}
    assert kinds["blank"].fixed == ("blank",) and kinds["blank"].id == "2023-MT-blank"
    assert sorted(kinds) == (["blank", "key"] if n_informative >= K else ["blank"])
    if n_informative >= K:
        key = kinds["key"]
        assert (key.co_item, key.published_key, key.correct_key, key.fixed) == (item["CO_ITEM"], wrong, right,
                                                                                 ("c0", "c1"))


def test_the_sample_is_bounded_and_does_not_depend_on_the_chunk_size(planted):
    d, _, _ = planted
    micro = d / "MICRODADOS_ENEM_2023.csv"
    small = sample_microdata(micro, 2023, per_group=25, blank_per_area=3, chunksize=41)
    large = sample_microdata(micro, 2023, per_group=25, blank_per_area=3, chunksize=100_000)
    pd.testing.assert_frame_equal(small, large)
    blank = small["answers"].str.fullmatch(r"\.+")
    assert small[~blank].groupby(["area", "CO_PROVA"]).size().max() == 25
    assert small[blank].groupby("area").size().max() <= 3
    assert list(small.columns) == list(read_cases(FIXTURES / "enem" / "cases_2017_mt.jsonl").columns)


def test_one_real_exam_area_2017_mt():
    """The development set's 2017 MT (60 real candidates): the shipped zip, found from the published file."""
    inep = SHARED / "reference" / "enem_inep"
    cases = read_cases(inep / "inep_cases_dev.json")
    mt = cases[(cases["year"] == 2017) & (cases["area"] == "MT")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ErrataWarning)              # the entries apply as written
        got = discover_cases(mt, inep)
        scored = score_cases(mt, inep, errata=got.entries)
    (e,) = got.entries
    shipped = next(s for s in errata() if s.id == "2017-MT-zip")
    assert (e.reference_booklet, e.not_scored, e.signature) == (404, (82352,), shipped.signature)
    assert (len(e.fixed), e.broken, e.gain) == (50, (), "10 -> 60 of 60")
    assert (scored["error"].abs() < 0.05).all()


def test_cross_validation_scores_each_half_with_the_other_halfs_errata(tmp_path):
    items, cases = FIXTURES / "enem" / "ITENS_PROVA_2017.csv", read_cases(FIXTURES / "enem" / "cases_2017_mt.jsonl")
    cv = cross_validate(pd.concat([cases] * 2, ignore_index=True).assign(case=lambda c: [f"x{i}" for i in c.index]),
                        items)
    assert cv["fold"].value_counts().tolist() == [5, 5]
    assert not cv["exact_published"].any() and cv["exact_held_out"].all()
    assert set(cv["corrections"]) == {"2017-MT-zip"}


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory):
    """(folder, truth) with an item file published with one error of each kind the discovery writes: in MT 1211 a
    key published "X" (INEP's mark of an annulled item) that INEP scored, an item scored in the file that INEP
    did not score, and all-blank sheets given the all-wrong score; a zip in CN 1221; an item of CH 1055 scored with
    parameters INEP never published (an estimate). Candidates are simulated on the truth."""
    d = tmp_path_factory.mktemp("every_kind")
    true = read_itens_prova(GOLDEN, errata=False)
    x_item, annul_item = (int(nth_scored(true, 1211, k)["CO_ITEM"]) for k in (7, 25))
    zip_item, hidden = int(nth_scored(true, 1221, 15)["CO_ITEM"]), int(nth_scored(true, 1055, 12)["CO_ITEM"])
    annul_params = true.loc[true["CO_ITEM"] == annul_item, P].iloc[0].to_numpy()
    for item in (zip_item, annul_item):
        true.loc[true["CO_ITEM"] == item, ["IN_ITEM_ABAN", *P]] = [1, np.nan, np.nan, np.nan]
    published = publish_unpublished(publish_key(publish_zip(true, 1221, "CN", [zip_item]), x_item, "X"), hidden)
    published.loc[published["CO_ITEM"] == annul_item, ["IN_ITEM_ABAN", *P]] = [0, *annul_params]
    itens_prova_layout(published).to_csv(d / "ITENS_PROVA_2023.csv", sep=";", index=False, encoding="latin-1")
    md, _ = simulate_microdata(true, {"MT": [1211], "CN": [1221], "CH": [1055]}, 300, np.random.default_rng(11),
                               perturb=0.0, unusable=0.0)
    mt = true[(true["CO_PROVA"] == 1211) & (true["SG_AREA"] == "MT")]
    blank = md.index[md["TP_PRESENCA_MT"] == 1][:2]
    md.loc[blank, "TX_RESPOSTAS_MT"] = "." * 45
    md.loc[blank, "NU_NOTA_MT"] = enem.score_answers("*" * 45, mt, "MT").score     # not 0: INEP's rule that year
    md.to_csv(d / "MICRODADOS_ENEM_2023.csv", sep=";", index=False, encoding="latin-1")
    return d, {"x": x_item, "annul": annul_item, "zip": zip_item, "hidden": hidden}


def test_every_kind_of_discovered_erratum_reads_back(every_kind, tmp_path):
    """discover -> write -> read -> score equals the in-memory result, for zip, key (published "X"), annul, blank
    and estimated entries. Fails before issue 41: the file was refused ("'X': expected one of ('A', ..., 'E')")."""
    d, what = every_kind
    items, micro = d / "ITENS_PROVA_2023.csv", d / "MICRODADOS_ENEM_2023.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ErrataWarning)                  # every entry applies as written
        found = discover_errata(items, micro)
    kinds = {(e.kind, e.area): e for e in found.entries}
    assert sorted(kinds) == [("annul", "MT"), ("blank", "MT"), ("key", "MT"), ("zip", "CH"), ("zip", "CN")]
    key, annul = kinds["key", "MT"], kinds["annul", "MT"]
    assert (key.co_item, key.published_key, annul.co_item) == (what["x"], "X", what["annul"])
    assert kinds["zip", "CN"].not_scored == (what["zip"],)
    assert kinds["zip", "CH"].not_scored == () and kinds["zip", "CH"].unpublished[0]["co_item"] == what["hidden"]
    path = found.write(tmp_path / "errata_2023.json")
    assert load_errata(path) == found.entries                         # every field reads back as written
    cases = sample_microdata(micro, 2023)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EnemEstimatedParamsWarning)
        from_file = score_cases(cases, {2023: items}, errata=path)
        in_memory = score_cases(cases, {2023: items}, errata=found.entries)
        published = score_cases(cases, {2023: items}, errata=False)
    pd.testing.assert_frame_equal(from_file, in_memory)
    exact, before = (from_file["error"].abs() < 0.05), (published["error"].abs() < 0.05)
    assert exact.groupby(cases["area"]).mean().min() > 0.9 and before.mean() < 0.5
