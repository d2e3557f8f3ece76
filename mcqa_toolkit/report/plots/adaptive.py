"""Adaptive testing figures (notebooks/15_adaptive): CAT length per SE target against a random order, CAT vs
full-test theta for a population and for model runs, what a CAT run saved, and anchor-item error by k.
Data: `mcqa_toolkit.measure.adaptive`."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from mcqa_toolkit.report.plots._layout import (
    COLUMN_WIDTH,
    PAGE_WIDTH,
    _check,
    _cols,
    _facets,
    _hue_handles,
    _label_outer,
    _labels,
    _legend,
    _markers,
    _num,
    _palette,
    _styled,
)

ORDER_NAMES = {"adaptive": "CAT (maximum information)", "random": "random order"}
SELECTION_NAMES = {"nearest": "k-means, nearest the centre", "informative": "k-means, most informative",
                   "random": "random items"}
DENSITY_CMAP = LinearSegmentedColormap.from_list("persons", ["#d6e2ef", "#1f4e79"])  # darker than the human
# background of the IRT figures: here the population is the subject, not the backdrop
ESTIMATOR_NAMES = {"gpirt": "gp-IRT", "pirt": "p-IRT", "irt": "IRT", "weighted": "weighted anchors"}


def _lines(ax, frame: pd.DataFrame, x: str, y: str, hue: str, colors: dict, markers: dict) -> None:
    for lv, g in frame.groupby(hue, sort=False):
        g = g.sort_values(x)
        ax.plot(g[x], g[y], marker=markers[lv], color=colors[lv], ms=4.5, lw=1.3)


def _identity(ax) -> None:
    ax.axline((0.0, 0.0), slope=1.0, color="0.4", ls="--", lw=0.9, zorder=1)


def _stats_text(stats: pd.Series) -> str:
    return (f"r = {_num(stats['correlation'], '.3f')}, bias = {_num(stats['bias'], '.3f')}, "
            f"RMSE = {_num(stats['rmse'], '.3f')}")


@_styled
def cat_length(curve: pd.DataFrame, max_items: int | None = None, n_items: int | None = None) -> Figure:
    """Left: mean test length (line) and median (hollow marker) per SE target, CAT vs random order
    (`measure.adaptive.cat_length_curve`); right: the share of persons whose posterior SD reached the target
    before the cap. Dashed: the max_items cap; dotted: the bank size."""
    _check(curve, ["se_target", "order", "mean_length", "median_length", "share_reached"], "curve")
    levels = [o for o in ORDER_NAMES if o in set(curve["order"])]
    colors, markers = _palette(levels), _markers(levels)
    fig = Figure(figsize=(PAGE_WIDTH * 0.85, 2.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    _lines(left, curve, "se_target", "mean_length", "order", colors, markers)
    for lv, g in curve.groupby("order"):
        left.scatter(g["se_target"], g["median_length"], marker=markers[lv], facecolors="white",
                     edgecolors=colors[lv], s=22, zorder=3)
    handles = [Line2D([], [], color=colors[lv], marker=markers[lv], label=ORDER_NAMES[lv]) for lv in levels]
    lines = [(max_items, "--", f"cap: {max_items} items")]
    if n_items != max_items:
        lines.append((n_items, ":", f"bank: {n_items} items"))
    for value, ls, label in lines:
        if value is not None:
            left.axhline(value, color="0.45", ls=ls, lw=0.9)
            handles.append(Line2D([], [], color="0.45", ls=ls, lw=0.9, label=label))
    left.set_ylim(0, None)
    left.set_xlabel("SE target (posterior SD)")
    left.set_ylabel("Items administered")
    left.set_title("mean (line) and median (hollow)", loc="left")
    _lines(right, curve, "se_target", "share_reached", "order", colors, markers)
    right.yaxis.set_major_formatter(PercentFormatter(1.0))
    right.set_ylim(-0.03, 1.03)
    right.set_xlabel("SE target (posterior SD)")
    right.set_ylabel("Persons reaching the target")
    _legend(fig, handles, ncols=min(len(handles), 2))
    return fig


@_styled
def cat_agreement(persons: pd.DataFrame, stats: pd.Series | None = None, x: str = "theta_full",
                  y: str = "theta_cat", label: str = "full test") -> Figure:
    """A population's CAT theta vs its full-test theta (`measure.adaptive.cat_vs_full`): left, the joint
    density with the identity line (title: `agreement` r, bias, RMSE, when given); right, the difference CAT - full
    against the full-test theta, with the mean difference (bias) and +-1 RMSE."""
    _check(persons, [x, y], "persons")
    d = persons[y] - persons[x]
    fig = Figure(figsize=(PAGE_WIDTH * 0.85, 2.9), layout="constrained")
    left, right = fig.subplots(1, 2)
    left.hexbin(persons[x], persons[y], gridsize=30, cmap=DENSITY_CMAP, mincnt=1, bins="log", linewidths=0,
                rasterized=True)
    _identity(left)
    left.set_xlabel(f"θ, {label} (EAP)")
    left.set_ylabel("θ, CAT (EAP)")
    right.hexbin(persons[x], d, gridsize=30, cmap=DENSITY_CMAP, mincnt=1, bins="log", linewidths=0, rasterized=True)
    bias, rmse = float(d.mean()), float(np.sqrt((d ** 2).mean()))
    right.axhline(0, color="0.4", lw=0.8)
    right.axhline(bias, color="0.15", ls="--", lw=0.9)
    for s in (-1, 1):
        right.axhline(bias + s * rmse, color="0.15", ls=":", lw=0.9)
    right.set_xlabel(f"θ, {label} (EAP)")
    right.set_ylabel("θ CAT − θ full")
    if stats is not None:
        left.set_title(_stats_text(stats), loc="left")
    _legend(fig, [Patch(facecolor=DENSITY_CMAP(0.6), label=f"{len(persons):,} persons (log density)"),
                  Line2D([], [], color="0.4", ls="--", lw=0.9, label="identity (left)"),
                  Line2D([], [], color="0.15", ls="--", lw=0.9, label="bias (right)"),
                  Line2D([], [], color="0.15", ls=":", lw=0.9, label="bias ± RMSE")], ncols=4)
    return fig


@_styled
def model_cat_vs_full(frame: pd.DataFrame, col: str | Sequence[str] | None = ("strategy", "language"),
                      hue: str = "model") -> Figure:
    """Each shuffle of an adaptive model run (`measure.adaptive.model_cat_vs_full`): the CAT's final theta
    +- its SE (vertical) against the full-test theta +- posterior SD of the same shuffle (horizontal)."""
    _check(frame, ["theta_full", "psd_full", "theta_cat", "se_cat", hue, *_cols(col)], "frame")
    levels = sorted(frame[hue].unique())
    colors, markers = _palette(levels), _markers(levels)
    fig, panels = _facets(frame, col=col, panel=(2.3, 2.3), wrap=4)
    for p in panels:
        _identity(p.ax)
        for lv, g in p.frame.groupby(hue, sort=True):
            p.ax.errorbar(g["theta_full"], g["theta_cat"], xerr=g["psd_full"], yerr=g["se_cat"], fmt=markers[lv],
                          color=colors[lv], ms=4.5, lw=0.9, capsize=2, alpha=0.85)
        # "box": the panels share both axes, which matplotlib refuses to combine with adjustable="datalim"
        p.ax.set_aspect("equal", adjustable="box")
    _label_outer(fig, panels, "θ, full test (EAP ± posterior SD)", "θ, CAT (EAP ± SE)")
    handles = _hue_handles(levels, colors, markers) + [Line2D([], [], color="0.4", ls="--", lw=0.9,
                                                              label="identity")]
    _legend(fig, handles, title="one point per shuffle")
    return fig


@_styled
def adaptive_savings(savings: pd.DataFrame, rows: str | Sequence[str] = ("model", "language", "strategy")) -> Figure:
    """Per adaptive run (`measure.adaptive.adaptive_savings`): the share of items and of forwarded tokens the
    CAT saved against its full-form run (negative: the CAT forwarded more, e.g. when the full run shared
    long prompt prefixes between consecutive items)."""
    _check(savings, [*_cols(rows), "items_saved_pct", "tokens_saved_pct"], "savings")
    labels = list(_labels(savings, rows))
    kinds = {"items_saved_pct": "items", "tokens_saved_pct": "forwarded tokens"}
    colors = _palette(list(kinds))
    height = 0.6 + 0.32 * len(labels) * len(kinds) ** 0.5
    fig = Figure(figsize=(min(PAGE_WIDTH, COLUMN_WIDTH + 0.065 * max(len(s) for s in labels)), height + 0.6),
                 layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(labels))
    step = 0.8 / len(kinds)
    for k, (column, name) in enumerate(kinds.items()):
        pos = y + (k - (len(kinds) - 1) / 2) * step
        ax.barh(pos, savings[column].to_numpy(float), height=step * 0.9, color=colors[column], label=name)
        for yy, v in zip(pos, savings[column].to_numpy(float), strict=True):
            if np.isfinite(v):
                ax.annotate(f"{v:.0f}%", (max(v, 0.0), yy), xytext=(3, 0), textcoords="offset points", va="center")
    ax.set_yticks(y, labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    lowest = np.nanmin(savings[list(kinds)].to_numpy(float), initial=0.0)
    ax.set_xlim(lowest * 1.15 - 5 if lowest < 0 else 0.0, 115)   # a CAT can cost more tokens than the full test
    ax.axvline(0, color="0.3", lw=0.8)
    ax.xaxis.set_major_formatter(PercentFormatter(100))
    ax.set_xlabel("Saved by the CAT against the full test")
    ax.set_ylabel(" · ".join(_cols(rows)).capitalize())
    _legend(fig, [Patch(facecolor=colors[c], label=n) for c, n in kinds.items()])
    return fig


@_styled
def anchor_error(curve: pd.DataFrame, estimator: str = "gpirt") -> Figure:
    """Out-of-sample anchor error by number of anchors k (`measure.adaptive.anchor_curve`): mean absolute
    error of the accuracy estimate (`estimator`) and of theta, one line per anchor selection."""
    column = f"mae_{estimator}"
    _check(curve, ["k", "selection", "mae_theta", column], "curve")
    return _error_panels(curve, "k", "selection", SELECTION_NAMES, "Anchor items k",
                         [(column, f"MAE of accuracy ({ESTIMATOR_NAMES.get(estimator, estimator)})"),
                          ("mae_theta", "MAE of θ (vs full-test EAP)")], ncols=3)


BANK_ORDERS = {"cat": "CAT from the bank", "random": "random items"}


@_styled
def bank_error(summary: pd.DataFrame) -> Figure:
    """Leave-one-model-out error by number of items (`measure.population.lomo_summary`): mean absolute error of
    theta (against the model's EAP on the whole bank) and of the predicted accuracy, CAT against random items."""
    _check(summary, ["length", "order", "mae_theta", "mae_accuracy"], "summary")
    return _error_panels(summary, "length", "order", BANK_ORDERS, "Items given",
                         [("mae_theta", "MAE of θ (vs whole-bank EAP)"),
                          ("mae_accuracy", "MAE of predicted accuracy")])


def _error_panels(frame: pd.DataFrame, x: str, group: str, names: dict[str, str], xlabel: str,
                  panels: list[tuple[str, str]], ncols: int | None = None) -> Figure:
    """Error curves side by side, one panel per (column, y label), one line per level of `group` (in the order
    of `names`, which also labels them), y from 0."""
    levels = [g for g in names if g in set(frame[group])]
    colors, markers = _palette(levels), _markers(levels)
    fig = Figure(figsize=(PAGE_WIDTH * 0.85, 2.6), layout="constrained")
    for ax, (y, label) in zip(fig.subplots(1, len(panels), sharex=True), panels, strict=True):
        _lines(ax, frame, x, y, group, colors, markers)
        ax.set_ylim(0, None)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
        ax.set_xticks(sorted(frame[x].unique()))
    _legend(fig, [Line2D([], [], color=colors[g], marker=markers[g], label=names[g]) for g in levels], ncols=ncols)
    return fig
