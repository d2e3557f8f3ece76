"""Figures of the language-gap analysis: the score in each language and its difference from the reference
language with confidence intervals (`language_scores`), and model quality against that difference or the gap %
(`quality_gap`).
Data: `measure.kappa` / `measure.accuracy`, `measure.language_differences`, `measure.language_gap`.

The score figure shows absolute differences (kappa or accuracy, other language minus reference, paired item
bootstrap intervals), not the relative gap %: a percentage of the reference score is undefined near 0 and
flips its meaning when the reference score is negative (a kappa of -0.17 against 0.25 read "+166%").
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mcqa_toolkit.report.plots._layout import (
    ACCURACY_LABEL,
    PAGE_WIDTH,
    _check,
    _corr_title,
    _facets,
    _fit,
    _hue_handles,
    _label_outer,
    _legend,
    _levels,
    _markers,
    _nice,
    _palette,
    _panel_width,
    _select,
    _styled,
    _title,
)

SCORE_NAMES = {"kappa": "κ", "accuracy": "accuracy"}


def _score_label(score: str) -> str:
    return {"kappa": "Cohen's κ", "accuracy": ACCURACY_LABEL}.get(score, score)


def _bars(ax, frame: pd.DataFrame, x: str, xs: list, hue: str, levels: list, colors: dict, score: str) -> float:
    """Grouped bars of `score` (CI whiskers when the frame has ci_low / ci_high); returns the highest top."""
    width, top = 0.8 / len(levels), 0.0
    for k, lv in enumerate(levels):
        g = frame[frame[hue] == lv].set_index(x).reindex(xs)
        pos = np.arange(len(xs)) + (k - (len(levels) - 1) / 2) * width
        vals = g[score].to_numpy(float)
        ax.bar(pos, vals, width=width * 0.92, color=colors[lv])
        if {"ci_low", "ci_high"} <= set(g.columns):
            err = np.vstack([vals - g["ci_low"].to_numpy(float), g["ci_high"].to_numpy(float) - vals])
            ax.errorbar(pos, vals, yerr=np.nan_to_num(err).clip(min=0), fmt="none", ecolor="0.2", lw=0.8,
                        capsize=1.5)
        top = max(top, float(np.nanmax(np.append(vals, 0.0))))
    ax.axhline(0, color="0.3", lw=0.8)
    return top


def _differences(ax, frame: pd.DataFrame | None, x: str, xs: list, hue: str, levels: list, colors: dict) -> None:
    """Per non-reference language, the difference from the reference with its CI, under that language's bar."""
    width = 0.8 / len(levels)
    ax.axhline(0, color="0.3", lw=0.8)
    for k, lv in enumerate(levels):
        g = None if frame is None else frame[frame[hue] == lv].set_index(x).reindex(xs)
        if g is None or g["diff"].isna().all():
            continue
        pos = np.arange(len(xs)) + (k - (len(levels) - 1) / 2) * width
        d = g["diff"].to_numpy(float)
        err = np.vstack([d - g["ci_low"].to_numpy(float), g["ci_high"].to_numpy(float) - d])
        ax.errorbar(pos, d, yerr=np.nan_to_num(err).clip(min=0), fmt="o", color=colors[lv], ms=4, lw=1.0,
                    capsize=2)


def _ticks(ax, xs: list, names: list[str], slanted: bool) -> None:
    ax.set_xticks(range(len(xs)), names, rotation=30 if slanted else 0,
                  ha="right" if slanted else "center", rotation_mode="anchor")
    ax.set_xlim(-0.5, len(xs) - 0.5)


@_styled
def language_scores(scores: pd.DataFrame, differences: pd.DataFrame | None = None, score: str = "kappa",
                    x: str = "model", hue: str = "language", col: str | Sequence[str] | None = "strategy",
                    reference: str = "en", wrap: int = 4) -> Figure:
    """Score per model and language as bars (`measure.kappa` / `measure.accuracy`, CI whiskers when present),
    one panel per `col` level; with `differences` (`measure.language_differences`, same `score`), a panel
    under each with every other language's score minus the reference's and its 95% CI (> 0: better than the
    reference), drawn under that language's bar."""
    _check(scores, [x, hue, score], "scores")
    levels = sorted(scores[hue].unique(), key=lambda v: (v != reference, v))
    colors = _palette(levels)
    xs = sorted(scores[x].unique())
    names = [_nice(v) for v in xs]
    slanted = len(xs) > 2 or (len(xs) == 2 and max(len(n) for n in names) * 0.07 > 0.2 * len(levels))
    panel_w = max(1.5, 0.5 + 0.22 * len(xs) * len(levels))
    if differences is None:
        fig, panels = _facets(scores, col=col, panel=(panel_w, 2.4), wrap=wrap)
        highest = max(_bars(p.ax, p.frame, x, xs, hue, levels, colors, score) for p in panels)
        for p in panels:
            _ticks(p.ax, xs, names, slanted)
        panels[0].ax.set_ylim(top=highest * 1.08 + 0.02)
        _label_outer(fig, panels, x.capitalize(), _score_label(score))
        _legend(fig, _hue_handles(levels, colors, {}, kind="patch"))
        return fig
    _check(differences, [x, hue, "diff", "ci_low", "ci_high"], "differences")
    keys = _levels(scores, col)
    ncols = min(len(keys), wrap)
    blocks = math.ceil(len(keys) / ncols)
    fig = Figure(figsize=(min(PAGE_WIDTH, panel_w * ncols + 0.9), 3.7 * blocks + 0.7), layout="constrained")
    axes = fig.subplots(2 * blocks, ncols, squeeze=False, height_ratios=[1.5, 1.0] * blocks)
    for i, key in enumerate(keys):
        top, bottom = axes[2 * (i // ncols), i % ncols], axes[2 * (i // ncols) + 1, i % ncols]
        if i:   # every score panel on one y scale, every difference panel on another
            top.sharey(axes[0, 0])
            bottom.sharey(axes[1, 0])
        bottom.sharex(top)
        _bars(top, _select(scores, col, key), x, xs, hue, levels, colors, score)
        _differences(bottom, _select(differences, col, key), x, xs, hue, levels, colors)
        _ticks(bottom, xs, names, slanted)
        top.tick_params(labelbottom=False)          # shared with the difference panel below it
        if col is not None:
            top.set_title(_fit(_title(col, key), _panel_width(fig, ncols)))
        if i % ncols:
            top.tick_params(labelleft=False)
            bottom.tick_params(labelleft=False)
        else:
            top.set_ylabel(_score_label(score))
            bottom.set_ylabel(f"{SCORE_NAMES.get(score, score)}(language) −\n{SCORE_NAMES.get(score, score)}"
                              f"({_nice(reference)})")
    for i in range(len(keys), blocks * ncols):     # the unused cells of the last block
        axes[2 * (i // ncols), i % ncols].set_visible(False)
        axes[2 * (i // ncols) + 1, i % ncols].set_visible(False)
    fig.supxlabel(x.capitalize(), fontsize=9)
    name = SCORE_NAMES.get(score, score)
    _legend(fig, _hue_handles(levels, colors, {}, kind="patch"), title=f"bars: {name} · points: {name} − {name} in "
            f"{_nice(reference)} (> 0: better than {_nice(reference)}) · whiskers: 95% CI")
    return fig


@_styled
def quality_gap(gaps: pd.DataFrame, correlations: pd.DataFrame | None = None, quality: str = "score_ref",
                col: str | Sequence[str] | None = "language", hue: str = "model",
                style: str | None = "strategy", score: str = "kappa", gap: str = "gap_pct") -> Figure:
    """Model quality (reference-language score) vs the gap, one panel per language with Pearson r and p
    (`measure.gap_correlations`, same `col` and `gap`) in its title: gap "gap_pct" (`measure.language_gap`,
    > 0: worse), or "diff" (`measure.language_differences`: the score minus the reference's, > 0: better, with
    its 95% CI as whiskers)."""
    _check(gaps, [quality, gap, hue], "gaps")
    levels = sorted(gaps[hue].unique())
    colors = _palette(levels)
    styles = sorted(gaps[style].unique()) if style else [None]
    markers = _markers(styles)
    n_panels = min(len(_levels(gaps, col)), 4)
    legend_width = 1.4 if style and len(styles) > 1 else 0.0   # the two-block legend sits at the right
    fig, panels = _facets(gaps, col=col, panel=(2.3, 2.2), width=min(PAGE_WIDTH, 2.3 * n_panels + 0.7 + legend_width))
    room = (fig.get_figwidth() - legend_width - 0.7) / n_panels
    for p in panels:
        for (lv, st), g in p.frame.groupby([hue, style] if style else [hue, lambda _: None], sort=True):
            p.ax.scatter(g[quality], g[gap], color=colors[lv], marker=markers[st], s=28, zorder=3)
            if gap == "diff" and {"ci_low", "ci_high"} <= set(g.columns):
                err = np.vstack([g[gap] - g["ci_low"], g["ci_high"] - g[gap]])
                p.ax.errorbar(g[quality], g[gap], yerr=np.nan_to_num(err).clip(min=0), fmt="none",
                              ecolor=colors[lv], lw=0.7, alpha=0.6, zorder=2)
        p.ax.axhline(0, color="0.5", lw=0.8, ls=":")
        p.ax.margins(0.12)
        corr = _select(correlations, col, p.key)
        row = corr.iloc[0] if corr is not None and len(corr) else None
        if correlations is not None:
            p.ax.set_title(f"{p.ax.get_title()}\n{_fit(_corr_title(row), room, sep=', ')}")
    ref = gaps["reference"].iloc[0] if "reference" in gaps.columns else "reference"
    name = SCORE_NAMES.get(score, score)
    _label_outer(fig, panels, f"{_score_label(score)} in {_nice(ref)} (model quality)",
                 f"Gap % vs {_nice(ref)} (> 0: worse)" if gap == "gap_pct" else
                 f"{name} − {name} in {_nice(ref)}\n(> 0: better; 95% CI)")
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
