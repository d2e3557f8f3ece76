"""The course-exam figure: each system's exam score placed in the students' score distribution, one panel per
exam (the benchmark publishes the students' mean, median and SD, not their scores: the distribution is drawn
as the normal density with that mean and SD over [0, score_max], labelled as an approximation)."""
from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from scipy import stats as sps

from mcqa_toolkit.report.plots._layout import (
    HUMAN_COLOR,
    _check,
    _facets,
    _label_outer,
    _legend,
    _markers,
    _palette,
    _styled,
)


@_styled
def student_comparison(comparison: pd.DataFrame, hue: str | Sequence[str] = ("model", "strategy")) -> Figure:
    """Per exam: the students' normal-approximation density (mean, SD) with dashed mean and dotted median lines,
    and one marker per system at its score on the exam's scale (`model_score`), annotated with its percentile."""
    hue = [hue] if isinstance(hue, str) else list(hue)
    _check(comparison, [*hue, "exam", "model_score", "score_max", "score_avg", "score_median",
                        "score_standard_deviation", "percentile"], "comparison")
    f = comparison.assign(system_label=comparison[hue].astype(str).agg(" / ".join, axis=1),
                          exam_label=comparison.get("exam_name", comparison["exam"]).map(
                              lambda s: "\n".join(textwrap.wrap(str(s), 30))))
    systems = sorted(f["system_label"].unique())
    colors, markers = _palette(systems), _markers(systems)
    fig, panels = _facets(f, col="exam_label", panel=(3.2, 2.0), wrap=2, sharex=False, sharey=False)
    for p in panels:
        ex = p.frame.iloc[0]
        top, mean, sd = float(ex["score_max"]), float(ex["score_avg"]), float(ex["score_standard_deviation"])
        x = np.linspace(0, top, 200)
        dens = sps.norm.pdf(x, mean, sd) if sd > 0 else np.zeros_like(x)
        p.ax.fill_between(x, dens, color=HUMAN_COLOR, lw=0, zorder=0)
        p.ax.axvline(mean, color="0.35", ls="--", lw=0.9)
        p.ax.axvline(float(ex["score_median"]), color="0.35", ls=":", lw=0.9)
        peak = dens.max() if dens.max() > 0 else 1.0
        for k, r in enumerate(p.frame.sort_values("system_label").itertuples(index=False)):
            y = peak * (0.15 + 0.12 * k)
            p.ax.scatter([r.model_score], [y], marker=markers[r.system_label], color=colors[r.system_label], s=36,
                         zorder=3, edgecolors="white", linewidths=0.4)
            if np.isfinite(r.percentile):
                p.ax.annotate(f"pct {r.percentile:.0f}", (r.model_score, y), xytext=(4, 3),
                              textcoords="offset points", fontsize=9)
        p.ax.set_xlim(0, top)
        p.ax.set_ylim(0, peak * 1.15)
        p.ax.set_yticks([])
    _label_outer(fig, panels, "Exam score (points on the exam's scale)", "Students (density)")
    handles: list[Artist] = [Line2D([], [], ls="", marker=markers[s], color=colors[s], label=s) for s in systems]
    handles += [Patch(facecolor=HUMAN_COLOR, label="students: normal approx. (mean, SD)"),
                Line2D([], [], color="0.35", ls="--", label="student mean"),
                Line2D([], [], color="0.35", ls=":", label="student median")]
    _legend(fig, handles, ncols=2)
    return fig
