"""ENEM figures: how often our scores equal INEP's NU_NOTA (`mcqa validate-enem`; data: `enem.agreement`), and
the models' official scores among the real candidates of the exam (data: `enem.candidates`)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from mcqa_toolkit.report.plots._layout import (
    COLUMN_WIDTH,
    HUMAN_COLOR,
    MISSING_COLOR,
    PAGE_WIDTH,
    _check,
    _cols,
    _facets,
    _label_outer,
    _labels,
    _legend,
    _markers,
    _nice,
    _palette,
    _styled,
)

BANDS = {"share_exact": "equal at 0.1", "share_within_1": "within 1 point", "share_within_2": "within 2 points"}


def _panel_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One line per scored booklet x item set (label notes its unusable rows), then one per booklet none of
    whose rows could be used (label gives the reasons); columns label, usable and the three shares."""
    scored = frame[frame["item_set_rule"] != ""]
    bad = frame[frame["item_set_rule"] == ""]
    n_bad = bad.groupby("CO_PROVA")["n_candidates"].sum()
    out, noted = [], set()
    for _, r in scored.iterrows():
        label = str(r["CO_PROVA"])
        if r["item_set_rule"] in ("key", "given", "undetermined"):
            label += f" · set {r['item_set']}" + (" (?)" if r["item_set_rule"] == "undetermined" else "")
        if r["CO_PROVA"] in n_bad.index and r["CO_PROVA"] not in noted:
            label += f" (+{n_bad[r['CO_PROVA']]:,} not usable)"
            noted.add(r["CO_PROVA"])
        out.append({"label": label, "usable": True, **{b: r[b] for b in BANDS}})
    for co, g in bad[~bad["CO_PROVA"].isin(scored["CO_PROVA"])].groupby("CO_PROVA", sort=False):
        reasons = ", ".join(g["status"])
        out.append({"label": f"{co or '(empty)'}: {reasons} ({g['n_candidates'].sum():,})", "usable": False,
                    **{b: np.nan for b in BANDS}})
    return pd.DataFrame(out, columns=["label", "usable", *BANDS])


@_styled
def score_agreement(table: pd.DataFrame) -> Figure:
    """Per area, one line per booklet (and item set): the share of candidates whose score equals NU_NOTA at
    0.1, and within 1 and 2 points. The x axis starts just below the lowest share so small disagreements
    show. Booklets none of whose rows could be used are listed with the reason (an X at the left edge);
    "(?)" marks a booklet whose item sets nothing could tell apart (its candidates scored under each)."""
    _check(table, ["area", "CO_PROVA", "item_set", "item_set_rule", "status", "n_candidates", *BANDS], "table")
    levels = list(BANDS)
    colors, markers = _palette(levels), _markers(levels)
    per_area = {a: _panel_rows(g) for a, g in table.groupby("area", sort=True)}
    most = max(len(r) for r in per_area.values())
    lowest = np.nanmin(table[levels].to_numpy(float), initial=1.0)
    left = max(0.0, np.floor((lowest - 0.005) * 100) / 100)
    fig, panels = _facets(table, col="area", panel=(3.4, 0.24 * most + 0.6), wrap=2, sharey=False)
    for p in panels:
        rows = per_area[p.key[0]].iloc[::-1]     # first booklet on top
        y = np.arange(len(rows))
        ok = rows["usable"].to_numpy(bool)
        vals = rows[levels].to_numpy(float)
        if ok.any():
            lo, hi = np.nanmin(vals[ok], axis=1, initial=1.0), np.nanmax(vals[ok], axis=1, initial=0.0)
            p.ax.hlines(y[ok], lo, hi, color="0.75", lw=0.8, zorder=1)
        for k, band in enumerate(levels):
            p.ax.scatter(vals[ok, k], y[ok], marker=markers[band], color=colors[band], s=24, zorder=3,
                         edgecolors="white", linewidths=0.4)
        p.ax.scatter(np.full((~ok).sum(), left), y[~ok], marker="X", color=MISSING_COLOR, s=30, zorder=3,
                     clip_on=False)
        p.ax.set_yticks(y, rows["label"])
        p.ax.set_ylim(-0.7, len(rows) - 0.3)
        p.ax.set_xlim(left, 1.0 + (1.0 - left) * 0.03)
        p.ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=1 if left > 0.9 else 0))
        p.ax.grid(axis="x", color="0.92", lw=0.6)
    _label_outer(fig, panels, "Share of candidates by |our score − NU_NOTA|", "Booklet (CO_PROVA)")
    handles = [Line2D([], [], ls="", marker=markers[b], color=colors[b], label=BANDS[b]) for b in levels]
    if any((~r["usable"]).any() for r in per_area.values()):
        handles.append(Line2D([], [], ls="", marker="X", color=MISSING_COLOR, label="no usable rows"))
    _legend(fig, handles)
    return fig


@_styled
def among_candidates(histogram: pd.DataFrame, placement: pd.DataFrame, y: str | Sequence[str] = ("model", "strategy"),
                     hue: str = "language") -> Figure:
    """Top: the candidates' official scores of one exam (`CandidateScores.histogram`: share per bin, their median
    dashed). Below, on the same scale, one row per system (`enem.place_among_candidates`): its mean official
    score over shuffles (marker, one per `hue` level), the range of its shuffles (line) and its percentile among
    the candidates (text)."""
    _check(histogram, ["exam", "score_low", "score_high", "share", "n_candidates", "median"], "histogram")
    _check(placement, [*_cols(y), hue, "enem_score", "score_min", "score_max", "percentile"], "placement")
    if histogram["exam"].nunique() != 1:
        raise ValueError("among_candidates draws one exam; filter the histogram to one exam")
    cats = list(dict.fromkeys(_labels(placement.sort_values(_cols(y)), y)))
    levels = sorted(placement[hue].unique())
    colors, markers = _palette(levels), _markers(levels)
    label_width = 0.07 * max(len(c) for c in cats)
    rows_height = 0.3 + 0.17 * len(cats) * len(levels)
    fig = Figure(figsize=(min(PAGE_WIDTH, COLUMN_WIDTH + 0.6 + label_width), 1.9 + rows_height + 0.8),
                 layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [1.9, rows_height]})
    h = histogram
    top.bar(h["score_low"], h["share"] * 100, width=h["score_high"] - h["score_low"], align="edge", color=HUMAN_COLOR,
            lw=0)
    top.axvline(float(h["median"].iloc[0]), color="0.35", ls="--", lw=0.9)
    top.set_ylabel("Candidates (%)")
    top.set_title(f"{h['exam'].iloc[0]}: {int(h['n_candidates'].iloc[0]):,} candidates", loc="left")
    labels = _labels(placement, y)
    step = 0.8 / len(levels)
    for k, lv in enumerate(levels):
        g = placement[placement[hue] == lv]
        pos = np.array([cats.index(v) for v in labels[g.index]]) + (k - (len(levels) - 1) / 2) * step
        bottom.hlines(pos, g["score_min"], g["score_max"], color=colors[lv], lw=1.0)
        bottom.scatter(g["enem_score"], pos, marker=markers[lv], color=colors[lv], s=26, zorder=3)
        for x, yy, pct in zip(g["score_max"], pos, g["percentile"], strict=True):
            if np.isfinite(pct):
                bottom.annotate(f"{pct:.0f}", (x, yy), xytext=(4, 0), textcoords="offset points", va="center")
    bottom.set_yticks(range(len(cats)), cats)
    bottom.set_ylim(len(cats) - 0.5, -0.5)
    lo = min(float(h["score_low"].min()), float(placement["score_min"].min()))
    hi = max(float(h["score_high"].max()), float(placement["score_max"].max()))
    bottom.set_xlim(lo - 0.02 * (hi - lo), hi + 0.08 * (hi - lo))     # room for the percentile texts
    bottom.set_xlabel("Official ENEM score (INEP's scale)")
    handles = [Patch(facecolor=HUMAN_COLOR, label="candidates"), Line2D([], [], color="0.35", ls="--",
                                                                        label="candidates' median")]
    handles += [Line2D([], [], ls="-", marker=markers[lv], color=colors[lv], label=_nice(lv)) for lv in levels]
    _legend(fig, handles, ncols=min(len(handles), 4),
            title="marker: mean over shuffles · line: their range · text: percentile among the candidates")
    return fig
