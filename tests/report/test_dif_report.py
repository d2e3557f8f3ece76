"""The DIF report (report.dif): the runs' response patterns when every language has enough of them, simulated
persons otherwise (said everywhere); the B/C table with both languages' stems, escaped and shortened; the classes
file read by the question inspector and the HTML report's DIF section; the delta figure."""
from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from builders import records
from figure_checks import _check_figure
from paths import REPO

from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.measure import MIN_GROUP
from mcqa_toolkit.report import plots
from mcqa_toolkit.report.dif import CLASS_COLUMNS, TextTable, dif_items_table, dif_report, read_classes, write_classes
from mcqa_toolkit.report.html import write_html_report
from mcqa_toolkit.report.inspector import QuestionInspector
from mcqa_toolkit.report.inspector_views import dif_html

P_RIGHT = {"en": [0.9, 0.7, 0.6, 0.5, 0.5, 0.4, 0.3, 0.8], "pt": [0.1, 0.7, 0.6, 0.5, 0.5, 0.4, 0.3, 0.8]}
STEMS = {"en": "Question {i}: 50% of x_1 & y?", "pt": "Pergunta {i}: 50% de x_1 & y?"}


@pytest.fixture(scope="module")
def items():
    return ItemSet([Item(item_id=f"q{i}-{lang}", source="t", exam="e", options=("a", "b", "c", "d"), answer=0,
                         stem=STEMS[lang].format(i=i) * (8 if i == 0 else 1), subject="bio_chem", language=lang,
                         parallel_id=f"q{i}", irt=(1.2, -0.5 + 0.2 * i, 0.2))
                    for lang in ("en", "pt") for i in range(8)],
                   "t")


def _runs(shuffles: int) -> pd.DataFrame:
    """One model; per language `shuffles` response patterns over 8 questions; q0 is hard only in Portuguese."""
    rng = np.random.default_rng(5)
    rows = [{"item_id": f"q{i}-{lang}", "parallel_id": f"q{i}", "language": lang, "shuffle": s, "subject": "bio_chem",
             "choice": 0 if rng.random() < p else 1}
            for lang, ps in P_RIGHT.items() for s in range(shuffles) for i, p in enumerate(ps)]
    return records(rows)


@pytest.fixture(scope="module")
def from_runs(items):
    return dif_report(_runs(40), items, "en")


def test_runs_with_enough_patterns_are_analysed(from_runs):
    rep = from_runs
    assert rep.source == "runs" and not rep.simulated and rep.reason == "" and rep.truth is None
    assert rep.n_persons.to_dict() == {"en": 40, "pt": 40}
    assert list(rep.table.columns[:len(CLASS_COLUMNS)]) == CLASS_COLUMNS and len(rep.table) == 8
    q0 = rep.table.set_index("parallel_id").loc["q0"]
    assert q0["ets_class"] == "C" and q0["delta_mh"] < -1.5 and q0["subject"] == "bio_chem"
    assert "the runs' response patterns" in rep.describe()


def test_adaptive_runs_are_left_out_and_unusable_runs_fall_back(items, from_runs):
    """A CAT's records (extra["cat"]) hold 3 of the 8 questions: with them no question would be answered by
    every pattern, so they are left out; runs sharing fewer than 2 questions fall back to simulated persons."""
    runs = _runs(40)
    cat = runs[runs["item_id"].str[1].astype(int) < 3].assign(strategy="cat", extra='{"cat": {"position": 1}}')
    rep = dif_report(pd.concat([runs, cat], ignore_index=True), items, "en")
    assert rep.source == "runs" and rep.n_persons.to_dict() == {"en": 40, "pt": 40}
    assert rep.table["delta_mh"].equals(from_runs.table["delta_mh"])
    one = runs[runs["item_id"].str.startswith("q0")]
    fallback = dif_report(one, items, "en", n_per_group=40)
    assert fallback.simulated and "no complete response patterns" in fallback.reason


def test_too_few_patterns_fall_back_to_simulated_persons(items):
    few = _runs(MIN_GROUP - 1)
    rep = dif_report(few, items, "en", n_per_group=60, seed=1)
    assert rep.simulated and rep.n_persons.to_dict() == {"en": 60, "pt": 60}
    assert f"fewer than MIN_GROUP = {MIN_GROUP}" in rep.reason and "SIMULATED" in rep.describe()
    assert rep.table["injected"].sum() == 4 and set(rep.table["source"]) == {"simulated"}
    with pytest.raises(ValueError, match="too few response patterns"):
        dif_report(few, items, "en", persons="runs")
    with pytest.raises(ValueError, match="reference language 'it'"):
        dif_report(few, items, "it")
    perm = dif_report(_runs(30), items, "en", n_permutations=99)
    assert perm.table["p_perm"].between(0.01, 1).all()


def test_items_table_has_both_stems_escaped_and_shortened(from_runs, items, tmp_path):
    table = dif_items_table(from_runs, items, max_chars=60)
    row = table.frame.iloc[0]
    assert (row["question"], row["language"], row["class"]) == ("q0", "Portuguese", "C")
    assert row["stem (English)"].startswith("Question 0: 50% of x_1 & y?") and row["subject"] == "bio chem"
    assert row["stem (that language)"].startswith("Pergunta 0") and row["delta MH"] < -1.5
    tex = table.to_latex()
    assert tex.startswith("\\begin{table}") and r"50\% of x\_1 \& y?" in tex and r"~\ldots" in tex
    assert "$-$" in tex and "runs' response patterns" in tex
    path = table.save(tmp_path, "dif_items")
    assert pd.read_csv(path.with_suffix(".csv"))["stem (English)"][0] == row["stem (English)"]   # whole text
    with pytest.raises(ValueError, match="empty"):
        TextTable(table.frame.iloc[:0]).to_latex()


def test_classes_file_inspector_and_figure(from_runs, items, tmp_path):
    classes = read_classes(write_classes(from_runs, tmp_path).parent)
    assert list(classes.columns) == CLASS_COLUMNS and classes["flag_bh"].dtype == bool
    pt, en = items["q0-pt"], items["q0-en"]
    assert "class C" in dif_html(pt, classes) and "pt:" in dif_html(en, classes)
    assert dif_html(items["q0-pt"], classes[classes["parallel_id"] != "q0"]) == "" and dif_html(pt, None) == ""
    inspector = QuestionInspector(items, dif=classes)
    inspector.goto("q0-pt")
    assert "mcqa-dif" in inspector.question.value and "SIMULATED" not in inspector.question.value
    fig = plots.dif_deltas(from_runs.table, "en", from_runs.simulated, from_runs.n_persons)
    _check_figure(fig, 1)
    assert not fig.legends[0].get_title().get_text()
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a DIF classes file"):
        read_classes(tmp_path / "x.csv")


def test_simulated_report_in_figure_and_html(items, tmp_path):
    rep = dif_report(_runs(5), items, "en", n_per_group=80)
    fig = plots.dif_deltas(rep.table, "en", rep.simulated, rep.n_persons)
    _check_figure(fig, 1)
    assert fig.legends[0].get_title().get_text().startswith("SIMULATED persons")
    latex = tmp_path / "latex"
    write_classes(rep, latex)
    table = dif_items_table(rep, items)
    if not table.frame.empty:
        table.save(latex, "dif_items")
    plots.save(fig, tmp_path / "figures", "dif_delta_mh")
    shutil.copytree(REPO / "data" / "demo" / "results" / "gemma-3-270m__demo__en__S5", tmp_path / "outputs" / "r")
    page = write_html_report(tmp_path / "report.html", tmp_path / "outputs", tmp_path / "figures", latex).read_text()
    assert 'id="sec-dif"' in page and "These persons are SIMULATED" in page and "18 · DIF" in page
    assert 'id="table-dif_classes"' not in page                 # shown in the DIF section, not under Tables
