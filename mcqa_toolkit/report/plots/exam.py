"""Figures of the position-bias and contamination analyses (the language gap: `plots.language`). Data:
`mcqa_toolkit.measure`."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mcqa_toolkit.report.plots._layout import (
    COLUMN_WIDTH,
    PAGE_WIDTH,
    _check,
    _corr_title,
    _facets,
    _fit,
    _hue_handles,
    _label_outer,
    _legend,
    _markers,
    _palette,
    _select,
    _styled,
)


# ---- position bias ---------------------------------------------------------------------------------------------
def _letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def _position_grid(frame, value, pos_col, col, row, hue, ylabel, xlabel, bars: bool, uniform: bool) -> Figure:
    _check(frame, [value, pos_col, hue, "n_options"], "frame")
    levels = sorted(frame[hue].unique())
    colors, markers = _palette(levels), _markers(levels)
    fig, panels = _facets(frame, col=col, row=row, panel=(1.35 + 0.12 * len(levels), 1.6), sharex=False)
    width = 0.8 / len(levels)
    for p in panels:
        if p.frame.empty:
            continue
        k = int(p.frame["n_options"].max())
        for j, lv in enumerate(levels):
            g = p.frame[p.frame[hue] == lv].sort_values(pos_col)
            if bars:
                p.ax.bar(g[pos_col] + (j - (len(levels) - 1) / 2) * width, g[value], width=width * 0.92,
                         color=colors[lv])
            else:
                p.ax.plot(g[pos_col], g[value], marker=markers[lv], color=colors[lv], lw=1.2, ms=4)
        if uniform:
            for u in p.frame["uniform"].unique():
                p.ax.axhline(u, color="0.25", ls="--", lw=0.9)
        p.ax.set_xticks(range(k), _letters(k))
    _label_outer(fig, panels, xlabel, ylabel)
    handles = _hue_handles(levels, colors, markers, kind="patch" if bars else "marker")
    if uniform:
        handles.append(Line2D([], [], color="0.25", ls="--", lw=0.9, label="uniform (1/k)"))
    _legend(fig, handles)
    return fig


@_styled
def position_distributions(distribution: pd.DataFrame, col: str | Sequence[str] | None = "strategy",
                           row: str | Sequence[str] | None = "n_options", hue: str = "model") -> Figure:
    """Share of answers per chosen (shown) position (`measure.position_distribution`) against the uniform
    1/k line, one panel per strategy x number of options k."""
    return _position_grid(distribution.assign(k=distribution["n_options"]), "share", "position", col, row, hue,
                          "Share of answers", "Chosen position (as shown)", bars=True, uniform=True)


@_styled
def accuracy_by_position(frame: pd.DataFrame, col: str | Sequence[str] | None = "strategy",
                         row: str | Sequence[str] | None = "n_options", hue: str = "model") -> Figure:
    """Accuracy by the shown position of the correct answer (`measure.accuracy_by_position`)."""
    return _position_grid(frame, "accuracy", "correct_position", col, row, hue, "Accuracy",
                          "Position of the key (as shown)", bars=False, uniform=False)


@_styled
def shuffle_consistency(consistency: pd.DataFrame, x: str = "strategy", hue: str = "model") -> Figure:
    """Per item, the share of shuffles choosing the modal option (`measure.shuffle_consistency`), as box
    plots per strategy and model; strategies with a single shuffle (consistency undefined) are noted."""
    _check(consistency, [x, hue, "consistency"], "consistency")
    data = consistency.dropna(subset=["consistency"])
    single = sorted(set(consistency[x]) - set(data[x]))
    levels = sorted(consistency[hue].unique())
    colors = _palette(levels)
    n_x = max(data[x].nunique(), 1)
    longest = max((len(str(v)) for v in data[x].unique()), default=0) * 0.075   # inches at 9 pt
    # wide enough for each box group and for its name written flat (up to the page width)
    fig_w = COLUMN_WIDTH if data.empty else min(PAGE_WIDTH, max(1.6 + 0.5 * n_x * len(levels),
                                                                1.0 + n_x * (longest + 0.15)))
    fig = Figure(figsize=(fig_w, 2.8), layout="constrained")
    ax = fig.subplots()
    if data.empty:
        ax.text(0.5, 0.5, "no strategy has more than one shuffle:\nconsistency is undefined", ha="center",
                va="center", transform=ax.transAxes)
        ax.set_xticks([])
    else:
        xs = sorted(data[x].unique())
        box_w = 0.8 / len(levels)
        for j, lv in enumerate(levels):
            vals = [data.loc[(data[x] == xv) & (data[hue] == lv), "consistency"].to_numpy() for xv in xs]
            keep = [i for i, v in enumerate(vals) if len(v)]
            pos = np.arange(len(xs)) + (j - (len(levels) - 1) / 2) * box_w
            box = ax.boxplot([vals[i] for i in keep], positions=pos[keep], widths=box_w * 0.85, patch_artist=True,
                             manage_ticks=False, flierprops={"markersize": 2}, medianprops={"color": "0.1"})
            for patch in box["boxes"]:
                patch.set_facecolor(colors[lv])
        # a name wider than its slot (about 0.075 in a character at 9 pt) slants, or stands when even slanted
        # it would reach the next one
        slot = (fig_w - 1.0) / len(xs)
        angle = 0 if longest < slot * 0.9 else 30 if longest * 0.87 < slot * 0.9 else 90
        ax.set_xticks(range(len(xs)), [str(v) for v in xs], rotation=angle, ha="center" if angle in (0, 90)
                      else "right", rotation_mode="anchor" if angle == 30 else "default")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(x.capitalize() if not single else f"{x.capitalize()}\n" + _fit(
        f"(one shuffle, not shown: {', '.join(map(str, single))})", fig_w - 0.8, sep=", "))
    ax.set_ylabel("Share of shuffles choosing\nthe modal option")
    _legend(fig, _hue_handles(levels, colors, {}, kind="patch"))
    return fig


# ---- contamination ---------------------------------------------------------------------------------------------
@_styled
def min_k_accuracy(frame: pd.DataFrame, correlations: pd.DataFrame | None = None,
                   col: str | Sequence[str] | None = ("model", "strategy"), hue: str = "language",
                   k_percent: int = 20) -> Figure:
    """Min-K% prob vs per-item accuracy (`contamination.contamination_frame`), Pearson r and p per panel
    (`contamination.contamination_correlation`, same `col`) in the title."""
    _check(frame, ["min_k_prob", "accuracy", hue], "frame")
    levels = sorted(frame[hue].unique())
    colors, markers = _palette(levels), _markers(levels)
    fig, panels = _facets(frame, col=col, panel=(2.3, 2.2), wrap=3)
    for p in panels:
        for lv, g in p.frame.groupby(hue, sort=True):
            p.ax.scatter(g["min_k_prob"], g["accuracy"], s=12, marker=markers[lv], color=colors[lv], alpha=0.75,
                         linewidths=0)
        if correlations is not None:
            corr = _select(correlations, col, p.key)
            p.ax.set_title(f"{p.ax.get_title()}\n{_corr_title(corr.iloc[0] if len(corr) else None, False)}")
        p.ax.set_ylim(-0.05, 1.05)
    _label_outer(fig, panels, f"Min-{k_percent}% prob (higher = less familiar)", "Accuracy (share of shuffles)")
    _legend(fig, _hue_handles(levels, colors, markers))
    return fig
