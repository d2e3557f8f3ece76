"""enem.candidates: the candidates' scores streamed from synthetic INEP-format microdata (enem.simulate) give the
same percentiles as scipy's percentileofscore on the whole column, for every kind, chunk size and booklet
filter; the models' official scores placed among them; the figure; errors naming the file, row and column."""
import numpy as np
import pandas as pd
import pytest
from figure_checks import _check_figure
from scipy import stats as sps
from test_enem_official import ITEMS

from mcqa_toolkit import enem
from mcqa_toolkit.enem.booklet import ENEM_CONSTANTS
from mcqa_toolkit.enem.candidates import KINDS, items_area, official_scale
from mcqa_toolkit.enem.simulate import simulate_microdata
from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.report import plots

BOOKLETS = {"MT": [1211], "LC": [1201, 1065]}


@pytest.fixture(scope="module")
def microdata(tmp_path_factory):
    md, _ = simulate_microdata(ITEMS, BOOKLETS, 4000, np.random.default_rng(11), absent=0.15)
    path = tmp_path_factory.mktemp("candidates") / "MICRODADOS_ENEM_2023.csv"
    md.to_csv(path, sep=";", index=False, encoding="latin-1")
    return path, md


def _present(md, area, booklets=None):
    keep = (md[f"TP_PRESENCA_{area}"] == 1) & md[f"NU_NOTA_{area}"].notna()
    if booklets is not None:
        keep &= md[f"CO_PROVA_{area}"].isin(booklets)
    return md.loc[keep, f"NU_NOTA_{area}"].to_numpy(float)


def test_percentiles_equal_scipy_on_the_whole_column(microdata):
    path, md = microdata
    full = _present(md, "MT")
    cands = enem.candidate_scores(path, "MT", chunksize=333)
    assert cands.n == full.size and cands.n_rows == len(md) and len(cands.values) == len(np.unique(full))
    scores = np.array([0.0, 300.0, np.median(full), full[0], full.max(), 1000.0, 512.34])
    for kind in KINDS:
        want = [sps.percentileofscore(full, s, kind=kind) for s in scores]
        np.testing.assert_allclose(cands.percentile(scores, kind), want, rtol=0, atol=1e-9)
    assert cands.percentile(float(full[0])) == pytest.approx(sps.percentileofscore(full, full[0], kind="mean"))
    assert np.isnan(cands.percentile(np.nan)) and cands.quantile(0.5) == pytest.approx(np.quantile(
        full, 0.5, method="inverted_cdf"))
    same = enem.candidate_scores(path, "MT", chunksize=100_000)
    assert np.array_equal(same.values, cands.values) and np.array_equal(same.counts, cands.counts)


def test_booklet_filter_one_call_and_histogram(microdata):
    path, md = microdata
    one = _present(md, "LC", [1201])
    res = enem.percentile([450.0, 600.0], path, "LC", co_prova=1201, kind="weak")
    assert res.candidates.n == one.size and res.candidates.co_prova == (1201,)
    np.testing.assert_allclose(res.percentile, [sps.percentileofscore(one, s, kind="weak") for s in (450.0, 600.0)])
    both = enem.candidate_scores(path, "LC", co_prova=[1201, 1065])
    assert both.n == _present(md, "LC", [1201, 1065]).size and "booklet 1201, 1065" in both.label
    hist = both.histogram(width=25)
    assert hist["n"].sum() == both.n and hist["share"].sum() == pytest.approx(1.0)
    assert (hist["score_low"] % 25 == 0).all() and (hist["score_high"] - hist["score_low"] == 25).all()
    assert hist["score_low"].min() <= both.values.min() < hist["score_high"].max()
    assert "present candidates of LC, booklet 1201, 1065" in both.describe()
    # any iterable of codes, as the signature says: a set or a generator too (a TypeError before)
    for codes in ({1201, 1065}, (c for c in (1201, 1065))):
        got = enem.candidate_scores(path, "LC", co_prova=codes)
        assert set(got.co_prova) == {1201, 1065} and got.n == both.n


def test_models_placed_among_the_candidates_and_figure(microdata):
    path, _ = microdata
    cands = enem.candidate_scores(path, "MT")
    k, d = ENEM_CONSTANTS["MT"]
    assert official_scale([0.0, 1.0], "MT").tolist() == [round(d, 1), round(k + d, 1)]
    abilities = pd.DataFrame({"model": ["a", "a", "a", "b", "b", "b"], "strategy": "s", "language": "pt",
                              "shuffle": [0, 1, 2] * 2, "theta": [-1.0, -0.8, np.nan, 0.5, 0.7, 0.9]})
    placed = enem.place_among_candidates(abilities, cands).set_index("model")
    a_scores = official_scale([-1.0, -0.8], "MT")
    assert placed.loc["a", "n_persons"] == 2 and placed.loc["a", "enem_score"] == pytest.approx(a_scores.mean())
    assert placed.loc["a", "percentile"] == pytest.approx(cands.percentile(a_scores.mean()))
    assert placed.loc["b", "percentile_min"] < placed.loc["b", "percentile"] < placed.loc["b", "percentile_max"]
    fig = plots.among_candidates(cands.histogram(), placed.reset_index())
    panels = _check_figure(fig, 2)
    assert len(panels[1].texts) == 2 and f"{cands.n:,} candidates" in panels[0].get_title(loc="left")
    with pytest.raises(ValueError, match="one exam"):
        plots.among_candidates(pd.concat([cands.histogram(), cands.histogram().assign(exam="x")]), placed.reset_index())


def test_errors_name_file_row_and_column(tmp_path, microdata):
    _, md = microdata
    bad = md.head(20).copy()
    bad["NU_NOTA_MT"] = bad["NU_NOTA_MT"].astype(object)
    bad.loc[bad.index[bad["TP_PRESENCA_MT"] == 1][2], "NU_NOTA_MT"] = "abc"
    path = tmp_path / "MICRODADOS.csv"
    bad.to_csv(path, sep=";", index=False, encoding="latin-1")
    row = int(bad.index[bad["TP_PRESENCA_MT"] == 1][2]) + 1
    with pytest.raises(DatasetError, match=f"record {row}: field 'NU_NOTA_MT': 'abc' is not a score"):
        enem.candidate_scores(path, "MT", chunksize=7)
    with pytest.raises(DatasetError, match="missing column"):
        enem.candidate_scores(path, "CN")
    with pytest.raises(ValueError, match="kind"):
        enem.candidate_scores(path, "LC").percentile(500, kind="median")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DatasetError, match="empty file"):
        enem.candidate_scores(tmp_path / "empty.csv", "MT")


def test_items_area():
    from mcqa_toolkit.items import Item, ItemSet

    def item(i, area):
        return Item(item_id=f"q{i}", source="enem", exam="e", stem="s", options=("a", "b"), answer=0,
                    meta={"area": area} if area else {})
    assert items_area(ItemSet([item(0, "MT"), item(1, "MT")])) == "MT"
    assert items_area(ItemSet([item(0, "MT"), item(1, "CN")])) is None and items_area(ItemSet([item(0, None)])) is None
