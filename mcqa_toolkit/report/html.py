"""The static results page: one self-contained HTML file a researcher can send to a colleague without Jupyter.

`write_html_report` gathers what `mcqa run` and the analysis notebooks left behind and renders it with the
jinja2 template `templates/report.html.j2`:
  - one row per run (model x dataset x strategy x language: accuracy with its 95% CI, kappa, unanswered,
    points earned / possible (every question type), Min-K%) with a link to the run's executed notebook, and the headline
    pivot (report.overview);
  - every table the analysis notebooks saved (`<latex>/<name>.csv`, captions from the `.tex` files);
  - the DIF section (notebooks/17_dif): ETS classes per language, the B/C questions with their text in both
    languages, and whether the persons were simulated;
  - the notebooks' headline numbers (`<latex>/<notebook>_headline.json`) as one tidy table;
  - every figure (`<figures>/*.png`), embedded as a data URI, shrunk to at most MAX_FIGURE_WIDTH pixels;
  - links to the executed analysis notebooks.
Every table is sortable by clicking a column header (a few lines of inline JavaScript); nothing is loaded
from the network. Links to notebooks are relative to the HTML file, so they work while the file stays next to
the runs folder.
"""
from __future__ import annotations

import base64
import datetime as dt
import io
import json
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from mcqa_toolkit import __version__
from mcqa_toolkit.report.overview import headline_table, runs_frame
from mcqa_toolkit.report.tables import unescape_latex

MAX_FIGURE_WIDTH = 1600  # pixels; the notebooks save 300 dpi PNGs, far more than a screen shows
SCREEN_SCALE = 1.5  # figures are shown at 1.5x their printed size (paper figures are 3.5-7 inches wide)
SECTIONS = {"tables": "10 · Tables", "irt": "11 · IRT", "gap": "12 · Language gap", "position": "13 · Position bias",
            "contamination": "14 · Contamination", "adaptive": "15 · Adaptive testing", "course": "16 · Course exam",
            "dif": "18 · DIF"}
DIF_FILES = ("dif_classes.csv", "dif_items.csv")   # notebooks/17_dif: shown in the DIF section, not under Tables


def _cell(value: Any, digits: int = 3) -> dict[str, Any]:
    """A table cell: the text shown and the key it sorts by (numbers numerically, missing values last)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return {"text": "", "sort": ""}
    if isinstance(value, bool):
        return {"text": str(value), "sort": str(value)}
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not float(value).is_integer():
            text = f"{value:.{digits}g}" if abs(value) < 1e-3 else f"{value:.{digits}f}"
        else:
            text = f"{value:g}"
        return {"text": text, "sort": repr(float(value)), "num": True}
    return {"text": str(value), "sort": str(value)}


def _table(frame: pd.DataFrame, title: str, table_id: str, links: dict[str, list[str | None]] | None = None,
           digits: int = 3) -> dict[str, Any]:
    """A frame as the template's table: columns, rows of cells, optional link per cell of some columns."""
    links = links or {}
    rows = []
    for i, row in enumerate(frame.itertuples(index=False)):
        cells = []
        for col, value in zip(frame.columns, row, strict=True):
            cell = _cell(value.item() if hasattr(value, "item") else value, digits)
            if col in links and links[col][i]:
                cell["href"] = links[col][i]
            cells.append(cell)
        rows.append(cells)
    return {"id": table_id, "title": title, "columns": [str(c) for c in frame.columns], "rows": rows}


def _relative(path: Path | None, start: Path) -> str | None:
    return None if path is None else Path(os.path.relpath(Path(path).resolve(), start.resolve())).as_posix()


def _caption(tex: Path) -> str:
    """The caption of a table written by `tables.Table.save` (its LaTeX escapes undone), else the file name."""
    found = re.search(r"^\\caption\{(.*)\}$", tex.read_text(), re.M) if tex.exists() else None
    if not found:
        return tex.stem.replace("_", " ").capitalize()
    return unescape_latex(found.group(1))


def figure_data_uri(path: Path, max_width: int = MAX_FIGURE_WIDTH) -> tuple[str, int]:
    """A PNG as a data URI and the width in CSS pixels at which it shows at SCREEN_SCALE x its printed size
    (the PNG's dpi; 96 CSS pixels an inch). A PNG wider than `max_width` pixels is shrunk by the smallest
    integer factor that fits (a box filter: 300 dpi figures become 150 dpi, about what SCREEN_SCALE shows, in
    a fraction of the time a resampling filter takes), flattened onto white."""
    from PIL import Image

    with Image.open(path) as img:
        dpi = float((img.info.get("dpi") or (96, 96))[0]) or 96.0
        css_width = round(img.width * 96 * SCREEN_SCALE / dpi)
        if img.mode in ("RGBA", "LA"):
            if img.getchannel("A").getextrema()[0] < 255:  # some transparency: onto white, not black
                img = Image.alpha_composite(Image.new("RGBA", img.size, "white"), img.convert("RGBA"))
            img = img.convert("RGB")
        factor = -(-img.width // max_width)
        if factor > 1:
            img = img.reduce(factor)
        buf = io.BytesIO()
        img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode(), css_width


def _figures(figures_dir: Path) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for png in sorted(figures_dir.glob("*.png")) if figures_dir.is_dir() else []:
        section = SECTIONS.get(png.stem.split("_")[0], "Other figures")
        src, width = figure_data_uri(png)
        groups.setdefault(section, []).append({"name": png.stem, "src": src, "width": width})
    order = list(SECTIONS.values())
    return [{"title": k, "figures": v} for k, v in sorted(groups.items(), key=lambda kv: (
        order.index(kv[0]) if kv[0] in order else len(order), kv[0]))]


def _dif_section(latex_dir: Path) -> dict[str, Any] | None:
    """The DIF section: ETS classes per focal language (and how many are flagged after Benjamini-Hochberg), the
    B/C questions with their stems, whether the persons were simulated; None without notebooks/17_dif's files."""
    path = latex_dir / DIF_FILES[0]
    if not path.is_file():
        return None
    classes = pd.read_csv(path, keep_default_na=False, na_values=[""])
    summary = classes.groupby("focal")["ets_class"].value_counts().unstack(fill_value=0)
    summary = summary.reindex(columns=["A", "B", "C"], fill_value=0).assign(
        flagged_after_BH=classes.groupby("focal")["flag_bh"].sum().astype(int)).reset_index()
    items = latex_dir / DIF_FILES[1]
    return {"reference": ", ".join(sorted(set(classes["reference"].astype(str)))),
            "simulated": bool((classes["source"] == "simulated").any()),
            "summary": _table(summary, "Questions per ETS class and focal language", "dif-summary"),
            "items": _table(pd.read_csv(items), _caption(items.with_suffix(".tex")), "dif-items")
            if items.is_file() else None}


def _headline_numbers(latex_dir: Path) -> pd.DataFrame:
    """Every `<notebook>_headline.json` flattened to rows (notebook, metric, group, value)."""
    rows = []
    for path in sorted(latex_dir.glob("*_headline.json")) if latex_dir.is_dir() else []:
        notebook = path.name[: -len("_headline.json")]
        for metric, value in json.loads(path.read_text()).items():
            items = value.items() if isinstance(value, dict) else [("", value)]
            rows += [(notebook, metric, group, v) for group, v in items]
    return pd.DataFrame(rows, columns=["notebook", "metric", "group", "value"])


def _runs_table(runs_dir: Path, out_dir: Path, languages: list[str] | None = None
                ) -> tuple[dict[str, Any], dict[str, Any] | None, pd.DataFrame]:
    runs = runs_frame(runs_dir)
    shown = runs.drop(columns=["run_dir", "notebook"]).rename(columns={
        "accuracy_ci_low": "acc. CI low", "accuracy_ci_high": "acc. CI high", "n_items": "items",
        "points_earned": "points", "points_possible": "of points", "min_k_prob_mean": "Min-K% mean"})
    shown["notebook"] = ["run_model.ipynb" if nb is not None else "" for nb in runs["notebook"]]
    links = {"notebook": [_relative(nb, out_dir) for nb in runs["notebook"]]}
    pivot = headline_table(runs, languages or list(dict.fromkeys(runs["language"])))
    pivot_table = _table(pivot.reset_index(), "Accuracy (Cohen's kappa) per model x strategy, one column per "
                         "language", "headline") if not pivot.empty else None
    return _table(shown, "Every run", "runs", links), pivot_table, runs


def write_html_report(out: str | Path, runs_dir: str | Path = "outputs", figures_dir: str | Path = "figures",
                      latex_dir: str | Path = "latex", title: str = "mcqa_toolkit results",
                      notebooks: Iterable[str | Path] | None = None, languages: list[str] | None = None) -> Path:
    """Write the self-contained results page to `out` and return its path.

    `notebooks`: executed analysis notebooks to link (default: `<runs_dir>/_report/*.ipynb`); `languages`:
    the order of the headline table's language columns (default: as the runs list them)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    out, results, figures, latex = (Path(x) for x in (out, runs_dir, figures_dir, latex_dir))
    out.parent.mkdir(parents=True, exist_ok=True)
    runs_table, pivot_table, runs = _runs_table(results, out.parent, languages)
    tables = [_table(pd.read_csv(csv), _caption(csv.with_suffix(".tex")), f"table-{csv.stem}")
              for csv in (sorted(latex.glob("*.csv")) if latex.is_dir() else []) if csv.name not in DIF_FILES]
    headline = _headline_numbers(latex)
    nbs = sorted((results / "_report").glob("*.ipynb")) if notebooks is None else [Path(n) for n in notebooks]
    provenance = sorted({json.dumps({k: v for k, v in (rd_prov or {}).items() if k in ("model", "source",
                                     "weights_sha256", "dtype", "device")}, sort_keys=True)
                         for rd_prov in _model_provenances(runs)})
    env = Environment(loader=FileSystemLoader(Path(__file__).with_name("templates")),
                      autoescape=select_autoescape(["html", "j2"]), trim_blocks=True, lstrip_blocks=True)
    html = env.get_template("report.html.j2").render(
        title=title, version=__version__, generated=dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        n_runs=len(runs), pivot=pivot_table, runs=runs_table, tables=tables, dif=_dif_section(latex),
        headline=_table(headline, "Headline numbers of the analysis notebooks", "headline-numbers", digits=4)
        if not headline.empty else None,
        figure_sections=_figures(figures), notebooks=[{"name": n.name, "href": _relative(n, out.parent)} for n in nbs],
        models=[json.loads(p) for p in provenance])
    out.write_text(html, encoding="utf-8")
    return out


def _model_provenances(runs: pd.DataFrame) -> list[dict[str, Any] | None]:  # None: no model block
    from mcqa_toolkit.records.store import RunDir

    return [RunDir(d).provenance().get("model") for d in runs["run_dir"]]


__all__ = ["write_html_report", "figure_data_uri", "MAX_FIGURE_WIDTH"]
