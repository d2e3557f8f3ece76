"""The ENEM paper's Figures 1-5: accuracy vs theta, response patterns, l_z vs theta, test information with
each model's theta, and item discrimination of models vs humans. Data: `mcqa_toolkit.measure`."""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from mcqa_toolkit.report.plots._layout import (
    ACCURACY_LABEL,
    COLUMN_WIDTH,
    MISSING_COLOR,
    PAGE_WIDTH,
    THETA_LABEL,
    _check,
    _cols,
    _facets,
    _hue_handles,
    _human_background,
    _human_handle,
    _label_outer,
    _labels,
    _legend,
    _levels,
    _markers,
    _nice,
    _num,
    _palette,
    _select,
    _styled,
    _title,
)


def _person_scatter(abilities, humans, regions, x, y, xlabel, ylabel, col, hue, human_label, ref=None):
    _check(abilities, [x, y, hue], "abilities")
    levels = sorted(abilities[hue].dropna().unique())
    colors, markers = _palette(levels), _markers(levels)
    fig, panels = _facets(abilities, col=col, panel=(2.3, 2.1))
    for p in panels:
        _human_background(p.ax, humans, x, y)
        if ref is not None:
            p.ax.axhline(ref[0], color="0.35", ls="--", lw=0.9, zorder=1)
        reg = _select(regions, col, p.key)
        for lv, g in p.frame.groupby(hue, sort=True):
            p.ax.scatter(g[x], g[y], s=16, marker=markers[lv], color=colors[lv], alpha=0.85, edgecolors="white",
                         linewidths=0.4, zorder=3)
            r = reg[reg[hue] == lv] if reg is not None and not reg.empty else None
            if r is not None:
                for _, poly in r.groupby([c for c in r.columns if c not in ("vertex", x, y, "n_points",
                                                                            "method")], sort=False):
                    p.ax.fill(poly[x], poly[y], facecolor=(*colors[lv], 0.15), edgecolor="none", zorder=2)
                    p.ax.fill(poly[x], poly[y], facecolor="none", edgecolor=colors[lv], lw=1.1, zorder=4)
    _label_outer(fig, panels, xlabel, ylabel)
    handles = _human_handle(humans, human_label) + _hue_handles(levels, colors, markers)
    if regions is not None and not regions.empty:
        handles.append(Patch(facecolor="none", edgecolor="0.3", label="central 90% of shuffles"))
    if ref is not None:
        handles.append(Line2D([], [], color="0.35", ls="--", lw=0.9, label=ref[1]))
    _legend(fig, handles)
    return fig


@_styled
def accuracy_theta(abilities: pd.DataFrame, humans: pd.DataFrame | None = None,
                   regions: pd.DataFrame | None = None, col: str | Sequence[str] | None = "language",
                   hue: str = "model", human_label: str = "Humans") -> Figure:
    """Figure 1: accuracy vs theta, one point per shuffle (`measure.model_abilities`), each model's
    central region (`measure.central_region`) and the humans (`human_abilities`) as a light hexbin."""
    return _person_scatter(abilities, humans, regions, "theta", "accuracy", THETA_LABEL, ACCURACY_LABEL, col, hue,
                           human_label)


@_styled
def lz_theta(abilities: pd.DataFrame, humans: pd.DataFrame | None = None,
             col: str | Sequence[str] | None = "language", hue: str = "model", human_label: str = "Humans",
             misfit: float = -1.645) -> Figure:
    """Figure 3: person fit l_z vs theta per shuffle over the humans' (theta, l_z) distribution; the dashed
    line marks the one-sided 5% misfit level of a standard normal l_z."""
    return _person_scatter(abilities, humans, None, "theta", "lz", THETA_LABEL, "Person fit $l_z$", col, hue,
                           human_label, ref=(misfit, f"$l_z$ = {misfit:.2f} (5% misfit)"))


@_styled
def response_patterns(shares: pd.DataFrame, rows: str | Sequence[str] = ("model", "strategy"),
                      row_facet: str | None = "language", item_key: str = "parallel_id") -> Figure:
    """Figure 2: systems x items heatmap of the share of shuffles correct (`measure.share_correct`),
    items sorted by difficulty b (black = always correct); one stacked panel per `row_facet` value."""
    _check(shares, [*_cols(rows), item_key, "share_correct", "b"], "shares")
    facets = _levels(shares, row_facet)
    n_rows = shares[_cols(rows)].drop_duplicates().shape[0]
    heights = [max(n_rows, 1) * 0.2 + 0.35 for _ in facets]
    fig = Figure(figsize=(PAGE_WIDTH, sum(heights) + 1.1), layout="constrained")
    axes = fig.subplots(len(facets), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    cmap = mpl.colormaps["Greys"].with_extremes(bad=MISSING_COLOR)
    missing = False
    for ax, key in zip(axes, facets, strict=True):
        sub = _select(shares, row_facet, key).assign(_row=lambda d: _labels(d, rows))
        order = sub.drop_duplicates(item_key).sort_values(["b", item_key], na_position="last")
        grid = sub.pivot_table(index="_row", columns=item_key, values="share_correct", aggfunc="first",
                               dropna=False).reindex(columns=order[item_key])
        missing |= bool(grid.isna().to_numpy().any())
        im = ax.imshow(grid.to_numpy(float), aspect="auto", cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
        ax.set_yticks(range(len(grid.index)), grid.index)
        b = order["b"].to_numpy(float)
        # at most 9 tick labels, evenly stepped and ~0.5 in apart (few items: adjacent labels would collide)
        room = max(2, int((PAGE_WIDTH - 0.1 * max(len(str(r)) for r in grid.index) - 1.2) / 0.5))
        ticks = np.arange(0, len(order), max(1, int(np.ceil((len(order) - 1) / (min(len(order), 9, room) - 1 or 1)))))
        ticks = ticks[np.isfinite(b[ticks])]
        ax.set_xticks(ticks, [_num(v, ".1f") for v in b[ticks]])
        ax.tick_params(length=2)
        ax.spines[:].set_visible(False)
        if key:
            ax.set_title(_title(row_facet, key), loc="left")
    calibrated = np.isfinite(shares["b"].to_numpy(float)).any()
    axes[-1].set_xlabel("Items sorted by difficulty (tick labels: IRT b)" if calibrated
                        else f"Items (no IRT difficulty: in {item_key} order)")
    row_label = " · ".join(_cols(rows)).capitalize()
    if len(axes) > 1:
        fig.supylabel(row_label, fontsize=9)
    else:
        axes[0].set_ylabel(row_label)
    fig.colorbar(im, ax=list(axes), label="Share of shuffles correct", shrink=0.9, aspect=25, pad=0.01)
    if missing:
        _legend(fig, [Patch(facecolor=MISSING_COLOR, label="not administered (a few-shot example, or not reached by "
                                                             "an adaptive test)")])
    return fig


@_styled
def information_theta(curve: pd.DataFrame, ci: pd.DataFrame, y: str | Sequence[str] = "model",
                      hue: str = "language") -> Figure:
    """Figure 4: test information and SE over theta (`measure.information_curve`, top) above each
    model's theta with its 95% interval over shuffles (`measure.theta_ci`, bottom)."""
    _check(curve, ["theta", "information", "se"], "curve")
    _check(ci, [*_cols(y), hue, "theta_mean", "ci_low", "ci_high"], "ci")
    cats = list(dict.fromkeys(_labels(ci.sort_values(_cols(y)), y)))
    levels = sorted(ci[hue].unique())
    colors, markers = _palette(levels), _markers(levels)
    height_bottom = 0.45 + 0.22 * len(cats) * max(1, len(levels)) ** 0.5
    label_width = 0.07 * max(len(c) for c in cats) + 0.08 * max(len(_nice(lv)) for lv in levels)
    fig = Figure(figsize=(min(PAGE_WIDTH, COLUMN_WIDTH + label_width), 2.0 + height_bottom + 0.6),
                 layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2.0, height_bottom]})
    top.plot(curve["theta"], curve["information"], color="0.15", lw=1.5)
    top.set_ylabel("Test information $I(θ)$")
    se_ax = top.twinx()
    se_ax.plot(curve["theta"], curve["se"], color=sns.color_palette("colorblind")[3], lw=1.2, ls="--")
    se_ax.set_ylabel("SE(θ) = $1/\\sqrt{I}$")
    se_ax.set_ylim(0, min(float(curve["se"].max()), 2.0) * 1.05)
    se_ax.spines["right"].set_visible(True)
    labels = _labels(ci, y)
    step = 0.7 / max(len(levels), 1)
    for k, lv in enumerate(levels):
        g = ci[ci[hue] == lv]
        pos = np.array([cats.index(v) for v in labels[g.index]]) + (k - (len(levels) - 1) / 2) * step
        err = np.vstack([g["theta_mean"] - g["ci_low"], g["ci_high"] - g["theta_mean"]]).clip(min=0)
        bottom.errorbar(g["theta_mean"], pos, xerr=np.nan_to_num(err), fmt=markers[lv], color=colors[lv],
                        ms=4.5, lw=1.1, capsize=2)
    bottom.set_yticks(range(len(cats)), cats)
    bottom.set_ylim(len(cats) - 0.5, -0.5)
    bottom.set_xlabel(THETA_LABEL)
    bottom.axvline(0, color="0.6", lw=0.8, ls=":")
    bottom.set_title("θ: mean and central 95% of shuffles", loc="left")
    _legend(fig, [Line2D([], [], color="0.15", lw=1.5, label="information"),
                  Line2D([], [], color=sns.color_palette("colorblind")[3], ls="--", label="SE")])
    bottom.legend(handles=_hue_handles(levels, colors, markers), loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  frameon=False, title=hue.capitalize())
    return fig


@_styled
def discrimination_distributions(di: pd.DataFrame, col: str | Sequence[str] | None = None, hue: str = "group",
                                 threshold: float = 0.2) -> Figure:
    """Figure 5: distribution of item discrimination indices (`measure.item_discrimination`, stacked
    with a `group` column such as humans / models), with the DI = 0.2 quality threshold."""
    _check(di, ["di", hue], "di")
    levels = sorted(di[hue].unique())
    colors = _palette(levels)
    fig, panels = _facets(di, col=col, panel=(3.0, 2.2), width=COLUMN_WIDTH + 0.3 if col is None else None)
    bins = np.linspace(-1, 1, 21)
    for p in panels:
        for lv, g in p.frame.groupby(hue, sort=True):
            vals = g["di"].dropna()
            if len(vals):
                p.ax.hist(vals, bins=bins, weights=np.full(len(vals), 100 / len(vals)), histtype="stepfilled",
                          color=colors[lv], alpha=0.3, lw=0)
                p.ax.hist(vals, bins=bins, weights=np.full(len(vals), 100 / len(vals)), histtype="step",
                          color=colors[lv], lw=1.4)
        p.ax.axvline(threshold, color="0.25", ls="--", lw=0.9)
        p.ax.set_xlim(-1, 1)
    _label_outer(fig, panels, "Discrimination index (top 25% − bottom 25%)", "Items (%)")
    handles = _hue_handles(levels, colors, {}, kind="patch")
    handles.append(Line2D([], [], color="0.25", ls="--", lw=0.9, label=f"DI = {threshold} (good above)"))
    _legend(fig, handles, ncols=3)
    return fig
