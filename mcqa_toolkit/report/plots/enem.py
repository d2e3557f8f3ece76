"""Figure of `mcqa validate-enem`: how often our ENEM scores equal INEP's NU_NOTA. Data: `enem.agreement`."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import PercentFormatter

from mcqa_toolkit.report.plots._layout import (MISSING_COLOR, _check, _facets, _label_outer, _legend, _markers,
                                               _palette, _styled)

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
