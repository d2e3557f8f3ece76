"""House style and facet layout shared by the figure modules: fonts >= 9 pt, the colour-blind palette with a
marker per level, panel grids with outer labels and a legend above, and `save` (PNG 300 dpi + PDF).

Figures are built with `matplotlib.figure.Figure` (no pyplot), so loops over strategies keep no global state.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

PAGE_WIDTH, COLUMN_WIDTH = 7.0, 3.4  # inches
STYLE = {**sns.axes_style("ticks"), "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9,
         "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9, "legend.title_fontsize": 9,
         "figure.titlesize": 10, "axes.spines.top": False, "axes.spines.right": False, "savefig.dpi": 300,
         "pdf.fonttype": 42, "ps.fonttype": 42}  # TrueType in PDFs: publishers reject Type 3 fonts
LANGUAGE_NAMES = {"pt": "Portuguese", "es": "Spanish", "it": "Italian", "en": "English", "fr": "French",
                  "de": "German"}
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<")
HUMAN_CMAP = LinearSegmentedColormap.from_list("humans", ["#eef3f8", "#9db4cf"])
HUMAN_COLOR = "#b9cbe0"
MISSING_COLOR = "#e69f00"  # colour-blind palette orange: items a system did not take (few-shot examples, CAT)
THETA_LABEL = "Ability θ (EAP, logit scale)"
ACCURACY_LABEL = "Accuracy (proportion correct)"


def _cols(by: str | Sequence[str] | None) -> list[str]:
    return [] if by is None else [by] if isinstance(by, str) else list(by)


def _nice(value: Any, column: str | None = None) -> str:
    """Display text of a value: language names, "k = 5" for n_options, a true minus sign for numbers."""
    if column == "n_options":
        return f"k = {value}"
    if isinstance(value, str):
        return LANGUAGE_NAMES.get(value, value)
    return str(value)


def _num(x: float, fmt: str = ".2f") -> str:
    return format(x, fmt).replace("-", "\u2212")


def _title(by: str | Sequence[str] | None, key: tuple) -> str:
    return " · ".join(_nice(v, c) for c, v in zip(_cols(by), key, strict=True))


def _levels(frame: pd.DataFrame, by: str | Sequence[str] | None) -> list[tuple]:
    cols = _cols(by)
    if not cols:
        return [()]
    return list(frame[cols].drop_duplicates().sort_values(cols).itertuples(index=False, name=None))


@overload
def _select(frame: None, by: str | Sequence[str] | None, key: tuple) -> None: ...
@overload
def _select(frame: pd.DataFrame, by: str | Sequence[str] | None, key: tuple) -> pd.DataFrame: ...
def _select(frame: pd.DataFrame | None, by: str | Sequence[str] | None, key: tuple) -> pd.DataFrame | None:
    cols = _cols(by)
    if frame is None or not cols or not set(cols) <= set(frame.columns):
        return frame
    mask = np.ones(len(frame), dtype=bool)
    for c, v in zip(cols, key, strict=True):
        mask &= (frame[c] == v).to_numpy()
    return frame[mask]


def _labels(frame: pd.DataFrame, by: str | Sequence[str]) -> pd.Series:
    """One display label per row from one or several columns ("model-a · S1")."""
    return frame[_cols(by)].apply(lambda r: " · ".join(_nice(v, c) for c, v in r.items()), axis=1)


def _palette(levels: Sequence[Any]) -> dict[Any, tuple]:
    colors = sns.color_palette("colorblind", max(len(levels), 1))
    return {lv: colors[i % len(colors)] for i, lv in enumerate(levels)}


def _markers(levels: Sequence[Any]) -> dict[Any, str]:
    return {lv: MARKERS[i % len(MARKERS)] for i, lv in enumerate(levels)}


def _check(frame: pd.DataFrame, needed: Sequence[str], name: str) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(frame.columns)}")
    if frame.empty:
        raise ValueError(f"{name} is empty: nothing to plot")


@dataclass
class _Panel:
    ax: Any
    frame: pd.DataFrame
    key: tuple          # row key + col key (the values `_select` matches on)
    pos: tuple[int, int]
    bottom: bool = True  # no panel below it in its column


def _facets(frame: pd.DataFrame, col=None, row=None, panel=(2.3, 2.0), wrap: int = 4, sharex=True,
            sharey=True, width: float | None = None) -> tuple[Figure, list[_Panel]]:
    """A constrained-layout grid with one panel per row x col level; without `row`, more than `wrap` col
    levels are spread over balanced rows (4 -> 2 x 2, 6 -> 2 x 3); with `row`, col levels that would not fit
    the page width at `panel[0]` inches each are spread over blocks of rows (8 strategies x 2 -> 2 blocks of
    4 x 2). Panel titles longer than a panel is wide are broken into lines at " · "."""
    ck, rk = _levels(frame, col), _levels(frame, row)
    if row is None and len(ck) > wrap:
        nrows = math.ceil(len(ck) / wrap)
        ncols = math.ceil(len(ck) / nrows)
        cells = [(i // ncols, i % ncols, (), c, i % ncols == ncols - 1) for i, c in enumerate(ck)]
    else:
        fit = len(ck) if row is None or width else max(1, int((PAGE_WIDTH - 0.7) // panel[0]))
        blocks = math.ceil(len(ck) / fit)
        ncols = math.ceil(len(ck) / blocks)            # balanced blocks: 5 columns -> 3 + 2, not 4 + 1
        nrows = len(rk) * blocks
        cells = [(b * len(rk) + i, j, r, c, j == len(ck[b * ncols:(b + 1) * ncols]) - 1)
                 for b in range(blocks) for i, r in enumerate(rk) for j, c in enumerate(ck[b * ncols:(b + 1) * ncols])]
    w = width or min(PAGE_WIDTH, panel[0] * ncols + 0.7)
    fig = Figure(figsize=(w, panel[1] * nrows + 0.9), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=sharex, sharey=sharey)
    panels = []
    for i, j, r, c, last in cells:
        sub = _select(_select(frame, row, r), col, c)
        ax = axes[i, j]
        # a grid of rows x cols gets margin titles (col on top of each block, row at the right) so that long
        # keys of neighbouring panels never run into each other
        title = _title(col, c) if row is None or i % len(rk) == 0 else ""
        if title:
            ax.set_title(_fit(title, _panel_width(fig, ncols)))
        if row is not None and last:
            ax.annotate(_title(row, r), (1.04, 0.5), xycoords="axes fraction", rotation=-90, ha="left",
                        va="center")
        if sub.empty:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="0.4")
        panels.append(_Panel(ax, sub, (*r, *c), (i, j)))
    used = {p.pos for p in panels}
    for p in panels:
        p.bottom = not any((k, p.pos[1]) in used for k in range(p.pos[0] + 1, nrows))
        if p.bottom:
            p.ax.tick_params(labelbottom=True)
    for i in range(nrows):
        for j in range(ncols):
            if (i, j) not in used:
                axes[i, j].set_visible(False)
    return fig, panels


def _panel_width(fig: Figure, ncols: int) -> float:
    """About how wide (inches) each of `ncols` panels of `fig` is: the figure less ~0.7 in of y labels."""
    return max(0.5, (fig.get_figwidth() - 0.7) / max(ncols, 1))


def _fit(text: str, width: float, sep: str = " · ") -> str:
    """`text` broken into lines at `sep` (then at spaces) so that each fits `width` inches at 9 pt (0.6 em a
    character, a little more than DejaVu Sans' average), so titles of neighbouring panels never overlap. A
    line broken at a comma keeps it; one broken at " · " drops the dot."""
    room = max(6, int(width * 72 / (9 * 0.6)))
    if len(text) <= room:
        return text
    lines: list[str] = []
    for part in text.split(sep):
        if lines and len(lines[-1]) + len(sep) + len(part) <= room:
            lines[-1] += sep + part
        else:
            if lines and sep.strip() == ",":
                lines[-1] += ","
            lines.append(part)
    return "\n".join(textwrap.fill(ln, room, break_long_words=False, break_on_hyphens=False) for ln in lines)


def _corr_title(row: pd.Series | None, with_n: bool = True) -> str:
    """'r = 0.41, p = 0.03, n = 12' (Pearson, from a correlation row), or why r is undefined."""
    if row is None or not np.isfinite(row.get("pearson_r", np.nan)):
        n = "" if row is None else f" (n = {int(row['n'])})"
        return f"r undefined{n}"
    text = f"r = {_num(row['pearson_r'])}, p = {_num(row['pearson_p'], '.2g')}"
    return f"{text}, n = {int(row['n'])}" if with_n else text


def _label_outer(fig: Figure, panels: list[_Panel], xlabel: str, ylabel: str) -> None:
    """Axis labels once per figure: on the panel itself in a single row/column, else as figure labels
    (per-panel labels of neighbouring columns would run into each other)."""
    nrows = 1 + max(p.pos[0] for p in panels)
    ncols = 1 + max(p.pos[1] for p in panels)
    if ncols > 1:
        fig.supxlabel(xlabel, fontsize=9)
    if nrows > 1:
        fig.supylabel(ylabel, fontsize=9)
    for p in panels:
        if ncols == 1 and p.bottom:
            p.ax.set_xlabel(xlabel)
        if nrows == 1 and p.pos[1] == 0:
            p.ax.set_ylabel(ylabel)


def _legend(fig: Figure, handles: list, title: str | None = None, ncols: int | None = None) -> None:
    if handles:
        fig.legend(handles=handles, loc="outside upper center", ncols=ncols or min(len(handles), 4),
                   frameon=False, title=title)


def _styled(func):
    """Run a plotting function under the house style (fonts >= 9 pt, ticks style)."""
    def wrapper(*args, **kwargs):
        with mpl.rc_context(STYLE):
            return func(*args, **kwargs)
    wrapper.__name__, wrapper.__doc__, wrapper.__wrapped__ = func.__name__, func.__doc__, func
    return wrapper


def _human_background(ax, humans: pd.DataFrame | None, x: str, y: str) -> None:
    if humans is not None and not humans.empty:
        ax.hexbin(humans[x], humans[y], gridsize=32, cmap=HUMAN_CMAP, mincnt=1, bins="log", linewidths=0,
                  zorder=0, rasterized=True)


def _human_handle(humans: pd.DataFrame | None, label: str) -> list:
    if humans is None or humans.empty:
        return []
    return [Patch(facecolor=HUMAN_COLOR, edgecolor="none", label=f"{label} (n = {len(humans):,})")]


def _hue_handles(levels, colors, markers, kind: str = "marker") -> list:
    if kind == "patch":
        return [Patch(facecolor=colors[lv], label=_nice(lv)) for lv in levels]
    return [Line2D([], [], ls="", marker=markers[lv], color=colors[lv], label=_nice(lv)) for lv in levels]


def save(fig: Figure, directory: str | Path, name: str) -> list[Path]:
    """Write `name`.png (300 dpi) and `name`.pdf to `directory` (created), both bbox tight; returns the paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    with mpl.rc_context(STYLE):
        for path in paths:
            fig.savefig(path, dpi=300, bbox_inches="tight")
    return paths
