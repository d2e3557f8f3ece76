"""The static results page and the headline table (report.html, report.overview), on the committed sample runs
(data/demo/results: Gemma-3-270M, S5, enem_1shot and its CAT in four languages, and one English course-exam run of
every question type) plus one saved figure and table; the page
in a real browser is tests/report/test_browser.py."""
from __future__ import annotations

import base64
import io
import json
import re
import shutil

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from paths import REPO
from PIL import Image

from mcqa_toolkit.report import plots, tables, write_headline
from mcqa_toolkit.report.html import MAX_FIGURE_WIDTH, SCREEN_SCALE, write_html_report
from mcqa_toolkit.report.overview import headline_table, headline_text, runs_frame

SAMPLE = REPO / "data" / "demo" / "results"
CAPTION = "Accuracy & kappa (95% CI) of <models> per x_y"


@pytest.fixture
def results(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "outputs")
    fig = Figure(figsize=(7, 2))
    fig.subplots().plot([0, 1], [1, 0])
    plots.save(fig, tmp_path / "figures", "tables_line")  # 300 dpi
    values = pd.DataFrame({"S5": [0.2, 0.3]}, index=pd.Index(["pt", "en"], name="language"))
    tables.Table(values, values * 0.1, caption=CAPTION, label="tab:x").save(tmp_path / "latex", "acc")
    write_headline(tmp_path / "latex", "10_tables", {"n_runs": 8, "accuracy": {"m / S5 / pt": 0.2}})
    (tmp_path / "outputs" / "_report").mkdir()
    (tmp_path / "outputs" / "_report" / "10_tables.ipynb").write_text("{}")
    return tmp_path


def test_runs_frame_and_headline_table():
    runs = runs_frame(SAMPLE)
    assert len(runs) == 13 and set(runs["strategy"]) == {"S5", "enem_1shot", "enem_1shot_cat", "course_generate"}
    assert runs["notebook"].notna().all()
    pt = runs[(runs["language"] == "pt") & (runs["strategy"] == "S5")].iloc[0]
    assert pt["accuracy"] == pytest.approx(json.loads((SAMPLE / "gemma-3-270m__demo__pt__S5" / "summary.json")
                                                      .read_text())["accuracy"])
    table = headline_table(runs, ["pt", "es", "it", "en"])
    assert list(table.columns) == ["pt", "es", "it", "en"] and len(table) == 4
    assert table.loc[("gemma-3-270m", "demo", "S5"), "pt"] == f"{pt['accuracy']:.3f} ({pt['kappa']:+.2f})"
    course = table.loc[("gemma-3-270m", "course_exam", "course_generate")]
    assert course["en"] == "0.500 (+0.33)" and course["pt"] == ""  # English only
    text = headline_text(SAMPLE, ["pt", "es", "it", "en"])
    assert "10 to 66 questions per run" in text and f"{pt['accuracy']:.3f}" in text  # CATs: 23-30 questions
    assert "66 questions per run" in headline_text(SAMPLE / "gemma-3-270m__demo__pt__S5")


def test_headline_shows_points_when_a_run_has_no_accuracy():
    runs = runs_frame(SAMPLE)
    short_only = runs.assign(accuracy=[None if s == "course_generate" else a
                                       for s, a in zip(runs["strategy"], runs["accuracy"], strict=True)])
    table = headline_table(short_only, ["en"])
    assert table.loc[("gemma-3-270m", "course_exam", "course_generate"), "en"] == "11/64 pts"


def test_table_save_writes_tidy_csv(tmp_path):
    values = pd.DataFrame({"S1": [0.5, np.nan]}, index=pd.Index(["a", "b"], name="model"))
    tables.Table(values, values / 10).save(tmp_path, "t")
    csv = pd.read_csv(tmp_path / "t.csv")
    assert list(csv.columns) == ["model", "S1", "S1 ±"] and csv["S1 ±"].iloc[0] == pytest.approx(0.05)
    assert (tmp_path / "t.tex").exists()


def test_html_report_is_one_self_contained_file(results):
    out = write_html_report(results / "outputs" / "report.html", results / "outputs", results / "figures",
                            results / "latex", languages=["pt", "es", "it", "en"])
    html = out.read_text()
    headline = html.split('id="headline"')[1].split("</thead>")[0]
    assert re.findall(r'<th scope="col" tabindex="0">(\w\w)</th>', headline) == ["pt", "es", "it", "en"]
    assert '<th scope="col" tabindex="0">points</th><th scope="col" tabindex="0">of points</th>' in html
    assert not re.search(r"""(src|href)=["'](https?:)?//""", html)  # nothing from the network
    assert "<script>" in html and "<style>" in html and "<link" not in html
    runs = html.split('id="runs"')[1].split("</table>")[0]
    assert runs.count("<tr>") == 1 + 13
    links = re.findall(r'href="([^"]+)"', runs)
    assert len(links) == 13 and all(not h.startswith("/") and (out.parent / h).exists() for h in links)
    assert 'href="_report/10_tables.ipynb"' in html
    assert CAPTION.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in html  # LaTeX escapes undone
    assert re.search(r'<th scope="col" tabindex="0">S5 ±</th>', html)
    src, width = re.search(r'<img src="data:image/png;base64,([^"]+)" alt="tables_line" style="width: (\d+)px"',
                           html).groups()
    with Image.open(results / "figures" / "tables_line.png") as original:
        printed = original.width  # a 7 in figure at 300 dpi, cropped to its tight bounding box
    with Image.open(io.BytesIO(base64.b64decode(src))) as img:
        factor = -(-printed // MAX_FIGURE_WIDTH)
        assert factor > 1 and img.width == -(-printed // factor) <= MAX_FIGURE_WIDTH  # shrunk by an integer factor
        assert img.mode == "RGB" and img.getpixel((0, 0)) == (255, 255, 255)  # opaque, white background
    assert int(width) == round(printed * 96 * SCREEN_SCALE / 300)
    assert 'data-sort="0.2"' in html and "m / S5 / pt" in html  # the notebooks' headline numbers
    assert "a5fd3b62230aa5ec" in html  # the weights' sha256 from the runs' provenance


def test_html_report_without_analysis_outputs(tmp_path):
    shutil.copytree(SAMPLE, tmp_path / "outputs")
    html = write_html_report(tmp_path / "r.html", tmp_path / "outputs", tmp_path / "none", tmp_path / "none")
    text = html.read_text()
    assert "13 runs" in text and 'id="runs"' in text and 'id="headline"' in text
    assert 'id="sec-figures"' not in text and 'id="sec-tables"' not in text and 'id="sec-notebooks"' not in text
