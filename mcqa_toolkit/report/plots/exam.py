"""Figures of the language-gap, position-bias and contamination analyses. Data: `mcqa_toolkit.measure`."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mcqa_toolkit.report.plots._layout import (ACCURACY_LABEL, PAGE_WIDTH, _check, _facets, _hue_handles, _label_outer,
                                        _legend, _levels, _markers, _nice, _num, _palette, _select, _styled)


def _score_label(score: str) -> str:
    return {"kappa": "Cohen's κ", "accuracy": ACCURACY_LABEL}.get(score, score)


@_styled
def language_scores(scores: pd.DataFrame, gaps: pd.DataFrame | None = None, score: str = "kappa",
                    x: str = "model", hue: str = "language", col: str | Sequence[str] | None = "strategy",
                    reference: str = "en") -> Figure:
    """Score per model and language as bars (`measure.kappa` / `measure.accuracy`, CI whiskers when present),
    each non-reference bar labelled with its gap % (`measure.language_gap`: > 0 = worse than `reference`)."""
    _check(scores, [x, hue, score], "scores")
    levels = sorted(scores[hue].unique(), key=lambda v: (v != reference, v))
    colors = _palette(levels)
    xs = sorted(scores[x].unique())
    names = [_nice(v) for v in xs]
    slanted = len(xs) > 2 or (len(xs) == 2 and max(len(n) for n in names) * 0.07 > 0.2 * len(levels))
    fig, panels = _facets(scores, col=col, panel=(max(1.5, 0.5 + 0.22 * len(xs) * len(levels)), 2.4), wrap=4)
    width = 0.8 / len(levels)
    has_ci = {"ci_low", "ci_high"} <= set(scores.columns)
    highest = 0.0
    for p in panels:
        gp = _select(gaps, col, p.key)
        top = []
        for k, lv in enumerate(levels):
            g = p.frame[p.frame[hue] == lv].set_index(x).reindex(xs)
            pos = np.arange(len(xs)) + (k - (len(levels) - 1) / 2) * width
            vals = g[score].to_numpy(float)
            p.ax.bar(pos, vals, width=width * 0.92, color=colors[lv])
            hi = vals
            if has_ci:
                lo_e, hi_e = (vals - g["ci_low"].to_numpy(float)), (g["ci_high"].to_numpy(float) - vals)
                p.ax.errorbar(pos, vals, yerr=np.nan_to_num(np.vstack([lo_e, hi_e]).clip(min=0)), fmt="none",
                              ecolor="0.2", lw=0.8, capsize=1.5)
                hi = np.fmax(vals, g["ci_high"].to_numpy(float))
            top.append(np.nanmax(np.append(hi, 0.0)))
            if gp is not None and lv != reference:
                gap = gp[gp[hue] == lv].set_index(x)["gap_pct"].reindex(xs)
                for px, h, gv in zip(pos, hi, gap.to_numpy(float)):
                    if np.isfinite(gv) and np.isfinite(h):
                        p.ax.annotate(_num(gv, "+.0f") + "%", (px, max(h, 0)), xytext=(0, 3),
                                      textcoords="offset points", rotation=90, ha="center", va="bottom")
        p.ax.axhline(0, color="0.3", lw=0.8)
        p.ax.set_xticks(range(len(xs)), names, rotation=30 if slanted else 0, ha="right" if slanted else "center",
                        rotation_mode="anchor")
        highest = max(highest, *top)
    # shared y axis: head room above the highest bar of any panel for the rotated gap labels
    panels[0].ax.set_ylim(top=highest * (1.35 if gaps is not None else 1.08) + 0.02)
    _label_outer(fig, panels, x.capitalize(), _score_label(score))
    title = f"bar labels: gap % vs {_nice(reference)}" if gaps is not None else None
    _legend(fig, _hue_handles(levels, colors, {}, kind="patch"), title=title)
    return fig


def _corr_title(row: pd.Series | None, with_n: bool = True) -> str:
    """'r = 0.41, p = 0.03, n = 12' (Pearson, from a correlation row), or why r is undefined."""
    if row is None or not np.isfinite(row.get("pearson_r", np.nan)):
        n = "" if row is None else f" (n = {int(row['n'])})"
        return f"r undefined{n}"
    text = f"r = {_num(row['pearson_r'])}, p = {_num(row['pearson_p'], '.2g')}"
    return f"{text}, n = {int(row['n'])}" if with_n else text


@_styled
def quality_gap(gaps: pd.DataFrame, correlations: pd.DataFrame | None = None, quality: str = "score_ref",
                col: str | Sequence[str] | None = "language", hue: str = "model",
                style: str | None = "strategy", score: str = "kappa") -> Figure:
    """Model quality (reference-language score) vs gap % (`measure.language_gap`), one panel per language with
    Pearson r and p (`measure.gap_correlations`, same `col`) in its title."""
    _check(gaps, [quality, "gap_pct", hue], "gaps")
    levels = sorted(gaps[hue].unique())
    colors = _palette(levels)
    styles = sorted(gaps[style].unique()) if style else [None]
    markers = _markers(styles)
    n_panels = min(len(_levels(gaps, col)), 4)
    legend_width = 1.4 if style and len(styles) > 1 else 0.0   # the two-block legend sits at the right
    fig, panels = _facets(gaps, col=col, panel=(2.3, 2.2), width=min(PAGE_WIDTH, 2.3 * n_panels + 0.7 + legend_width))
    for p in panels:
        for (lv, st), g in p.frame.groupby([hue, style] if style else [hue, lambda _: None], sort=True):
            p.ax.scatter(g[quality], g["gap_pct"], color=colors[lv], marker=markers[st], s=28, zorder=3)
        p.ax.axhline(0, color="0.5", lw=0.8, ls=":")
        p.ax.margins(0.12)
        corr = _select(correlations, col, p.key)
        row = corr.iloc[0] if corr is not None and len(corr) else None
        p.ax.set_title(f"{p.ax.get_title()}\n{_corr_title(row)}" if correlations is not None else p.ax.get_title())
    ref = gaps["reference"].iloc[0] if "reference" in gaps.columns else "reference"
    _label_outer(fig, panels, f"{_score_label(score)} in {_nice(ref)} (model quality)",
                 f"Gap % vs {_nice(ref)} (> 0: worse)")
    handles = _hue_handles(levels, colors, {lv: "o" for lv in levels})
    if not (style and len(styles) > 1):
        _legend(fig, handles)
        return fig
    # colour = hue, marker = style: one column with a bold header per block, to the right of the panels
    headers = [hue.capitalize(), style.capitalize()]
    handles = [Line2D([], [], ls="", label=headers[0]), *handles, Line2D([], [], ls="", label=headers[1]),
               *[Line2D([], [], ls="", marker=markers[s], color="0.3", label=str(s)) for s in styles]]
    legend = fig.legend(handles=handles, loc="outside right upper", frameon=False, handletextpad=0.3)
    for text in legend.get_texts():
        if text.get_text() in headers:
            text.set_fontweight("bold")
    return fig


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
    fig = Figure(figsize=(min(PAGE_WIDTH, 1.6 + 0.5 * n_x * len(levels)), 2.8), layout="constrained")
    ax = fig.subplots()
    if data.empty:
        ax.text(0.5, 0.5, "no strategy has more than one shuffle:\nconsistency is undefined", ha="center",
                va="center", transform=ax.transAxes)
        ax.set_xticks([])
    else:
        xs = sorted(data[x].unique())
        width = 0.8 / len(levels)
        for j, lv in enumerate(levels):
            vals = [data.loc[(data[x] == xv) & (data[hue] == lv), "consistency"].to_numpy() for xv in xs]
            keep = [i for i, v in enumerate(vals) if len(v)]
            pos = np.arange(len(xs)) + (j - (len(levels) - 1) / 2) * width
            box = ax.boxplot([vals[i] for i in keep], positions=pos[keep], widths=width * 0.85, patch_artist=True,
                             manage_ticks=False, flierprops={"markersize": 2}, medianprops={"color": "0.1"})
            for patch in box["boxes"]:
                patch.set_facecolor(colors[lv])
        ax.set_xticks(range(len(xs)), [str(v) for v in xs])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel(x.capitalize() if not single else f"{x.capitalize()} (one shuffle, not shown: "
                  f"{', '.join(map(str, single))})")
    ax.set_ylabel("Share of shuffles choosing\nthe modal option")
    _legend(fig, _hue_handles(levels, colors, {}, kind="patch"))
    return fig


# ---- contamination ---------------------------------------------------------------------------------------------
@_styled
def min_k_accuracy(frame: pd.DataFrame, correlations: pd.DataFrame | None = None,
                   col: str | Sequence[str] | None = ("model", "strategy"), hue: str = "language",
                   k_percent: int = 20) -> Figure:
    """Min-K% prob vs per-item accuracy (`measure.contamination_frame`), Pearson r and p per panel
    (`measure.contamination_correlation`, same `col`) in the title."""
    _check(frame, ["min_k_prob", "accuracy", hue], "frame")
    levels = sorted(frame[hue].unique())
    colors, markers = _palette(levels), _markers(levels)
    fig, panels = _facets(frame, col=col, panel=(2.3, 2.2), wrap=3)
    for p in panels:
        for lv, g in p.frame.groupby(hue, sort=True):
            p.ax.scatter(g["min_k_prob"], g["accuracy"], s=12, marker=markers[lv], color=colors[lv], alpha=0.75,
                         linewidths=0)
        corr = _select(correlations, col, p.key)
        if correlations is not None:
            p.ax.set_title(f"{p.ax.get_title()}\n{_corr_title(corr.iloc[0] if len(corr) else None, False)}")
        p.ax.set_ylim(-0.05, 1.05)
    _label_outer(fig, panels, f"Min-{k_percent}% prob (higher = less familiar)", "Accuracy (share of shuffles)")
    _legend(fig, _hue_handles(levels, colors, markers))
    return fig
