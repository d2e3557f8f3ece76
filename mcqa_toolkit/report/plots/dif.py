"""Figure of the DIF report: the Mantel-Haenszel delta of every question with its 95% interval against the
ETS A/B/C bands, questions grouped by subject, one panel per focal language. Data: `report.dif.dif_report`
(or any frame with focal, parallel_id, subject, delta_mh, delta_se, ets_class; `injected` marks the questions
a simulation gave DIF)."""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from mcqa_toolkit.report.plots._layout import PAGE_WIDTH, _check, _legend, _nice, _styled

CLASS_STYLE = {"A": ("0.55", "o"), "B": (sns.color_palette("colorblind")[1], "s"),
               "C": (sns.color_palette("colorblind")[3], "D")}
BANDS = (("B", 1.0, 1.5, "0.95"), ("C", 1.5, np.inf, "0.89"))   # |delta| bands shaded (A: |delta| < 1, blank)
DELTA_LABEL = "Mantel-Haenszel Δ (ETS delta)\n< 0: harder in that language"


def _positions(frame: pd.DataFrame) -> tuple[pd.Series, list[tuple[str, float, float]]]:
    """x of each question (by subject, then id, a gap of one between subjects) and (subject, first x, last x)."""
    order = frame[["subject", "parallel_id"]].drop_duplicates().sort_values(["subject", "parallel_id"])
    subj = order["subject"].to_numpy()
    x = np.arange(len(order)) + np.concatenate([[0], np.cumsum(subj[1:] != subj[:-1])])
    spans = [(s, float(x[subj == s].min()), float(x[subj == s].max())) for s in dict.fromkeys(subj)]
    return pd.Series(x, index=order["parallel_id"].to_numpy()), spans


@_styled
def dif_deltas(table: pd.DataFrame, reference: str = "en", simulated: bool = False,
               n_persons: pd.Series | None = None) -> Figure:
    """delta_MH per question (points, 95% interval = 1.96 SE) in the A/B/C bands (|delta| < 1, 1-1.5, >= 1.5;
    the class also needs significance, so a point in a band can be A), coloured and shaped by its ETS class, one
    panel per focal language; infinite deltas sit at the panel edge as triangles, questions without
    information are left out. simulated: the title says the persons are simulated and a ring marks the questions
    with injected DIF (`injected`)."""
    _check(table, ["focal", "parallel_id", "subject", "delta_mh", "delta_se", "ets_class"], "table")
    focal = sorted(table["focal"].unique())
    xs, spans = _positions(table)
    finite = table["delta_mh"].replace([np.inf, -np.inf], np.nan)
    reach = (finite.abs() + 1.96 * table["delta_se"].fillna(0)).max()
    lim = float(np.clip(np.nan_to_num(reach, nan=2.0) * 1.08, 2.2, 6.0))
    fig = Figure(figsize=(PAGE_WIDTH, 1.75 * len(focal) + 1.3), layout="constrained")
    axes = fig.subplots(len(focal), 1, squeeze=False, sharex=True, sharey=True)[:, 0]
    for ax, lang in zip(axes, focal, strict=True):
        t = table[table["focal"] == lang]
        x = xs.reindex(t["parallel_id"]).to_numpy(float)
        for _, lo, hi, shade in BANDS:
            for sign in (1, -1):
                ax.axhspan(sign * lo, sign * min(hi, lim), color=shade, lw=0, zorder=0)
        ax.axhline(0, color="0.3", lw=0.8, zorder=1)
        for _, first, _ in spans[1:]:
            ax.axvline(first - 1, color="0.6", lw=0.6, ls=":", zorder=1)
        d, se = t["delta_mh"].to_numpy(float), t["delta_se"].to_numpy(float)
        for cls, (color, marker) in CLASS_STYLE.items():
            m = (t["ets_class"] == cls).to_numpy() & np.isfinite(d)
            ax.errorbar(x[m], d[m], yerr=np.nan_to_num(1.96 * se[m]), fmt=marker, color=color, ms=3.5, lw=0.8,
                        capsize=0, zorder=3)
            for sign, tri in ((1, "^"), (-1, "v")):
                inf = (t["ets_class"] == cls).to_numpy() & (d == sign * np.inf)
                ax.scatter(x[inf], np.full(inf.sum(), sign * lim * 0.95), marker=tri, color=color, s=22, zorder=3)
        if simulated and "injected" in t:
            inj = t["injected"].fillna(False).to_numpy(bool)
            ax.scatter(x[inj], np.clip(np.nan_to_num(d[inj]), -lim * 0.95, lim * 0.95), s=90, facecolors="none",
                       edgecolors="0.1", linewidths=0.9, zorder=4)
        n = ("" if n_persons is None
             else f" (n = {int(n_persons.get(lang, 0)):,} vs {int(n_persons.get(reference, 0)):,})")
        ax.set_title(f"{_nice(lang)} vs {_nice(reference)}{n}", loc="left")
        ax.set_ylim(-lim, lim)
        ax.set_xlim(-1, xs.max() + 1)
    axes[-1].set_xticks([(a + b) / 2 for _, a, b in spans],
                        [textwrap.fill(str(s).replace("_", " "), 12) for s, _, _ in spans])
    for ax in axes:
        ax.tick_params(axis="x", length=0)      # subject names, not positions
    axes[-1].set_xlabel("Questions, grouped by subject")
    fig.supylabel(DELTA_LABEL, fontsize=9) if len(axes) > 1 else axes[0].set_ylabel(DELTA_LABEL)
    handles: list[Artist] = [Line2D([], [], ls="", marker=m, color=c, label=f"class {k}")
                             for k, (c, m) in CLASS_STYLE.items()]
    handles += [Patch(facecolor=BANDS[0][3], label="|Δ| 1–1.5"), Patch(facecolor=BANDS[1][3], label="|Δ| ≥ 1.5")]
    title = None
    if simulated:
        handles.append(Line2D([], [], ls="", marker="o", ms=8, markerfacecolor="none", markeredgecolor="0.1",
                              label="DIF injected"))
        title = ("SIMULATED persons drawn from the exam's 3PL with DIF injected on known questions (rings),\n"
                 "not the runs: they hold too few response patterns per language for DIF")
    _legend(fig, handles, title=title, ncols=len(handles))
    return fig
