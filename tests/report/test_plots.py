"""plots: every figure returns a Figure with labelled axes, the expected panels/artists, fonts >= 9 pt,
no pyplot state; single model/language inputs work; save() writes PNG and PDF."""
from __future__ import annotations

import io

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.text
import numpy as np
import pandas as pd
import pytest
from figure_checks import _check_figure
from matplotlib.collections import PolyCollection
from synthetic_results import write_synthetic_results

from mcqa_toolkit import measure
from mcqa_toolkit.contamination import contamination_correlation, contamination_frame
from mcqa_toolkit.datasets.demo import load_demo, load_population
from mcqa_toolkit.records.results import load_min_k, load_results
from mcqa_toolkit.report import plots

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = write_synthetic_results(tmp_path_factory.mktemp("outputs"))
    records, items, pop = load_results(root), load_demo(), load_population()
    humans = measure.human_abilities(pop, items)
    abilities = measure.model_abilities(records, items, human_theta=humans["theta"])
    kappa = measure.kappa(records, by=("model", "strategy", "language"), n_boot=50)
    gaps = measure.language_gap(kappa, by=("model", "strategy"))
    min_k = load_min_k(root)
    return dict(records=records, items=items, pop=pop, humans=humans, abilities=abilities, kappa=kappa, gaps=gaps,
                min_k=min_k, one=abilities[abilities["strategy"] == "enem_4shot"])






def test_plots_leave_no_pyplot_figures(data):
    before = plt.get_fignums()
    plots.accuracy_theta(data["one"], data["humans"])
    assert plt.get_fignums() == before


def test_accuracy_theta_humans_regions_per_language(data):
    regions = measure.central_region(data["one"])
    fig = plots.accuracy_theta(data["one"], data["humans"], regions)
    for ax in _check_figure(fig, 2):
        assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 1      # the human hexbin
        assert len(ax.patches) == 2 * 2                                           # fill + outline per model
        assert sum(len(c.get_offsets()) for c in ax.collections[1:]) == 2 * 3     # 2 models x 3 shuffles
    assert [t.get_text() for t in fig.axes[0].figure.legends[0].get_texts()][0].startswith("Humans (n = 20,000)")


def test_single_model_single_language_without_humans(data):
    one = data["one"][(data["one"]["model"] == "model-a") & (data["one"]["language"] == "en")]
    fig = plots.accuracy_theta(one, None, measure.central_region(one))
    _check_figure(fig, 1)
    _check_figure(plots.lz_theta(one), 1)


def test_lz_theta_has_misfit_line(data):
    fig = plots.lz_theta(data["one"], data["humans"])
    for ax in _check_figure(fig, 2):
        assert any(np.allclose(line.get_ydata(), -1.645) for line in ax.get_lines())


def test_response_patterns_heatmap_sorted_by_difficulty(data):
    shares = measure.share_correct(data["records"], data["items"])
    fig = plots.response_patterns(shares)
    panels = _check_figure(fig, 2)
    image = panels[0].get_images()[0].get_array()
    assert image.shape == (4, 65)                                   # model x strategy rows, non-annulled items
    assert np.ma.getmaskarray(image).sum() == 2 * 4                 # the 4 shot items of the 2 enem_4shot rows
    assert [t.get_text() for t in panels[0].get_yticklabels()][0] == "model-a · S1"
    assert len(fig.axes) == 3                                       # + colorbar
    few = shares[shares["parallel_id"].isin(sorted(shares["parallel_id"].unique())[:12])]   # the demo's 12
    assert len(_check_figure(plots.response_patterns(few), 2)[0].get_xticks()) <= 6      # labels ~0.5 in apart
    uncalibrated = plots.response_patterns(measure.share_correct(data["records"]))   # no items: b unknown
    assert _check_figure(uncalibrated, 2)[-1].get_xlabel().startswith("Items (no IRT difficulty")
    assert len(uncalibrated.axes[0].get_xticks()) == 0


def test_information_theta_curve_and_intervals(data):
    fig = plots.information_theta(measure.information_curve(data["items"]), measure.theta_ci(data["abilities"]),
                                  y=("model", "strategy"))
    assert len(fig.axes) == 3                                       # information, its SE twin, theta intervals
    bottom = fig.axes[1]
    assert bottom.get_xlabel().startswith("Ability") and len(bottom.containers) == 2   # one errorbar per language
    assert [t.get_text() for t in bottom.get_yticklabels()] == ["model-a · S1", "model-a · enem_4shot",
                                                                "model-b · S1", "model-b · enem_4shot"]
    _check_figure(fig, 2)


def test_discrimination_distributions_faceted(data):
    di = measure.discrimination_frame(data["records"], data["abilities"], data["pop"], data["humans"])
    assert set(di["group"]) == {"models", "humans"} and set(di["strategy"]) == {"S1", "enem_4shot"}
    _check_figure(plots.discrimination_distributions(di, col="strategy"), 2)
    _check_figure(plots.discrimination_distributions(di[di["strategy"] == "S1"]), 1)


def test_language_scores_bars_ci_and_differences(data):
    """Bars per language (CI whiskers) over a panel of differences from English with their CIs; no gap %."""
    diffs = measure.language_differences(data["records"], "en", "kappa", n_boot=50)
    fig = plots.language_scores(data["kappa"], diffs)
    panels = _check_figure(fig, 4)                                  # 2 strategies x (scores, differences)
    for top, bottom in ((panels[0], panels[2]), (panels[1], panels[3])):
        assert len(top.patches) == 2 * 2                            # 2 models x 2 languages
        assert len(bottom.containers) == 1                          # pt - en, one point per model
        assert len(bottom.containers[0].lines[0].get_xdata()) == 2
    assert panels[2].get_ylabel() == "κ(language) −\nκ(English)"
    assert not [t for t in fig.findobj(matplotlib.text.Text) if t.get_text().endswith("%")]
    assert "> 0: better than English" in fig.legends[0].get_title().get_text()
    _check_figure(plots.language_scores(data["kappa"]), 2)
    two = diffs[diffs["strategy"] == "S1"]
    ax = _check_figure(plots.quality_gap(diffs, measure.gap_correlations(diffs, gap="diff"), gap="diff"), 1)[0]
    assert "> 0: better" in ax.get_ylabel() and len(ax.collections) >= 2 and "n = 4" in ax.get_title()
    assert "r undefined (n = 2)" in _check_figure(plots.quality_gap(two, measure.gap_correlations(two, gap="diff"),
                                                                    gap="diff"), 1)[0].get_title()


def test_facet_titles_and_ticks_of_many_long_strategies_do_not_overlap(data):
    """The demo's eight strategies (enem_4shot beside enem_4shot_cat): the position grids go in blocks of
    rows, titles break at ' · ', long tick labels slant (figure_checks fails on any two overlapping texts)."""
    names = [("S1", "S2", "S3", "S4"), ("enem_4shot", "enem_4shot_cat", "enem_1shot", "enem_1shot_cat")]
    many = pd.concat([data["records"].assign(strategy=data["records"]["strategy"].map(
        {"S1": a, "enem_4shot": b})) for a, b in zip(*names, strict=True)], ignore_index=True)
    dist = measure.position_distribution(many, by=("model", "strategy"))
    assert len(_check_figure(plots.position_distributions(dist), 16)) == 16          # 8 strategies x k = 4, 5
    _check_figure(plots.accuracy_by_position(measure.accuracy_by_position(many, by=("model", "strategy"))), 16)
    _check_figure(plots.shuffle_consistency(measure.shuffle_consistency(many, by=("model", "strategy"))), 1)
    kappa = measure.kappa(many, by=("model", "strategy", "language"), n_boot=0)
    _check_figure(plots.language_scores(kappa, measure.language_differences(many, n_boot=20)), 16)
    gaps = measure.language_gap(kappa, by=("model", "strategy"))
    _check_figure(plots.quality_gap(gaps, measure.gap_correlations(gaps)), 1)


def test_quality_gap_reports_r_or_why_not(data):
    corr = measure.gap_correlations(data["gaps"])
    ax = _check_figure(plots.quality_gap(data["gaps"], corr), 1)[0]
    assert "r = " in ax.get_title() and "n = 4" in ax.get_title()
    two = data["gaps"][data["gaps"]["strategy"] == "S1"]
    ax = _check_figure(plots.quality_gap(two, measure.gap_correlations(two)), 1)[0]
    assert "r undefined (n = 2)" in ax.get_title()


def test_position_figures(data):
    dist = measure.position_distribution(data["records"], by=("model", "strategy"))
    panels = _check_figure(plots.position_distributions(dist), 4)   # 2 strategies x k = 4, 5
    assert {len(ax.patches) for ax in panels} == {2 * 4, 2 * 5}
    acc = measure.accuracy_by_position(data["records"], by=("model", "strategy"))
    _check_figure(plots.accuracy_by_position(acc), 4)
    cons = measure.shuffle_consistency(data["records"], by=("model", "strategy"))
    _check_figure(plots.shuffle_consistency(cons), 1)
    single = measure.shuffle_consistency(data["records"][data["records"]["shuffle"] == 0], by=("model", "strategy"))
    ax = _check_figure(plots.shuffle_consistency(single), 1)[0]
    assert "more than one shuffle" in ax.texts[0].get_text()


def test_min_k_accuracy_panels_with_correlations(data):
    frame = contamination_frame(data["min_k"], data["records"])
    corr = contamination_correlation(data["min_k"], data["records"])
    panels = _check_figure(plots.min_k_accuracy(frame, corr), 4)
    assert all("r = −0." in ax.get_title() for ax in panels)


def test_save_writes_png_and_pdf(data, tmp_path):
    fig = plots.lz_theta(data["one"])
    paths = plots.save(fig, tmp_path / "figs", "lz")
    assert [p.name for p in paths] == ["lz.png", "lz.pdf"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths[1].read_bytes()[:5] == b"%PDF-"
    assert b"/Type3" not in paths[1].read_bytes()                  # TrueType fonts, as publishers require
    from PIL import Image

    with Image.open(paths[0]) as im:
        assert im.info["dpi"][0] == pytest.approx(300, abs=1)


def test_plots_reject_missing_columns(data):
    with pytest.raises(ValueError, match="lacks column"):
        plots.accuracy_theta(pd.DataFrame({"theta": [0.0]}))


@pytest.fixture(scope="module")
def adaptive(tmp_path_factory):
    from synthetic_results import write_adaptive_results

    from mcqa_toolkit.irt.cat import CatConfig
    from mcqa_toolkit.measure import adaptive as A

    bank, u, theta = A.population_sample(load_population(), load_demo(), 300, seed=1)
    records = load_results(write_adaptive_results(tmp_path_factory.mktemp("adaptive")))
    frame = A.model_cat_vs_full(records, load_demo())
    anchors = pd.DataFrame({"k": [5, 5, 5, 10, 10, 10], "selection": ["nearest", "informative", "random"] * 2,
                            "mae_theta": [0.6, 0.55, 0.65, 0.45, 0.4, 0.5],
                            "mae_gpirt": [0.09, 0.08, 0.1, 0.07, 0.06, 0.075]})
    return dict(curve=A.cat_length_curve(bank, u, [0.4, 0.5], max_items=25),
                persons=A.cat_vs_full(bank, u, CatConfig(se_target=0.4, max_items=15), theta_true=theta),
                frame=frame, savings=A.adaptive_savings(frame), anchors=anchors, n_items=bank.n_items)


def test_cat_length_lines_per_order_and_cap(adaptive):
    left, right = _check_figure(plots.cat_length(adaptive["curve"], 25, adaptive["n_items"]), 2)
    assert len([ln for ln in left.get_lines() if len(ln.get_xdata()) == 2]) == 2 + 2   # 2 orders + cap + bank
    assert [ln.get_ydata()[0] for ln in left.get_lines()[-2:]] == [25, adaptive["n_items"]]
    assert right.get_ylim()[1] > 1.0 and "target" in right.get_ylabel()
    texts = [t.get_text() for t in left.figure.legends[0].get_texts()]
    assert texts == ["CAT (maximum information)", "random order", "cap: 25 items", "bank: 66 items"]


def test_cat_agreement_density_and_difference(adaptive):
    from mcqa_toolkit.measure.adaptive import agreement

    p = adaptive["persons"]
    stats = agreement(p["theta_full"], p["theta_cat"])
    left, right = _check_figure(plots.cat_agreement(p, stats), 2)
    assert left.get_title(loc="left").startswith("r = 0.9") and "RMSE" in left.get_title(loc="left")
    bias = [ln.get_ydata()[0] for ln in right.get_lines()][1]
    assert bias == pytest.approx(stats["bias"])


def test_model_cat_vs_full_one_errorbar_per_shuffle(adaptive):
    (ax,) = _check_figure(plots.model_cat_vs_full(adaptive["frame"]), 1)
    assert len(ax.containers) == 2 and all(len(c.lines[0].get_xdata()) == 3 for c in ax.containers)
    assert "English" in ax.get_title()


def test_model_cat_vs_full_one_panel_per_language(adaptive):
    """The demo grid: one adaptive strategy in four languages, panels sharing both axes."""
    one = adaptive["frame"]
    # a CAT theta range unlike the full-test one, so that equal aspect has to adjust the panels
    frame = pd.concat([one.assign(language=lang, theta_cat=one["theta_cat"] * 4 + k)
                       for k, lang in enumerate(("pt", "es", "it", "en"))])
    fig = plots.model_cat_vs_full(frame)
    panels = _check_figure(fig, 4)
    assert all(ax.get_aspect() == 1.0 for ax in panels)
    fig.savefig(io.BytesIO(), format="png", dpi=100)  # what plots.save does


def test_adaptive_savings_bars_and_negative_savings(adaptive):
    (ax,) = _check_figure(plots.adaptive_savings(adaptive["savings"]), 1)
    assert len(ax.patches) == 2 * 2
    worse = adaptive["savings"].assign(tokens_saved_pct=[-40.0, 10.0])
    (ax,) = _check_figure(plots.adaptive_savings(worse), 1)
    assert ax.get_xlim()[0] < -40                                           # a CAT costing more stays visible


def test_anchor_error_two_panels_one_line_per_selection(adaptive):
    acc, theta = _check_figure(plots.anchor_error(adaptive["anchors"]), 2)
    assert len(acc.get_lines()) == len(theta.get_lines()) == 3
    assert "gp-IRT" in acc.get_ylabel() and list(acc.get_xticks()) == [5, 10]
