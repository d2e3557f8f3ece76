"""Figure of the contamination validation: the ROC curve of every detector (one panel each) for the models trained
on an exam, one colour per number of exposures (grey: the clean model, against the same splits; thin light grey:
the controls fine-tuned on other exams, one line per control and split), one line style per seed of the split. Data:
`contamination.roc_curves` with each model's exposures and split (`report.contamination.with_models`); the AUCs are in
the table beside it (report.contamination.auc_table)."""
from __future__ import annotations

import math

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from mcqa_toolkit.contamination.detectors import DETECTOR_NAMES as NAMES
from mcqa_toolkit.report.plots._layout import PAGE_WIDTH, _check, _legend, _styled

STYLES = ("-", "--", ":", "-.")


def _exposure_label(e: int) -> str:
    return "clean model" if e == 0 else f"{e} exposure{'s' if e > 1 else ''}"


@_styled
def detector_roc(curves: pd.DataFrame) -> Figure:
    """ROC per detector panel (curves: detector, exposures, split, fpr, tpr; kind and model where controls are
    drawn), the diagonal of a detector that finds nothing in light grey."""
    _check(curves, ["detector", "exposures", "split", "fpr", "tpr"], "curves")
    is_control = curves["kind"].eq("control") if "kind" in curves else pd.Series(False, index=curves.index)
    controls, curves = curves[is_control], curves[~is_control]
    detectors = [d for d in NAMES if d in set(curves["detector"])]
    exposures = sorted(curves["exposures"].unique())
    splits = sorted(curves["split"].unique())
    palette = sns.color_palette("colorblind")
    colors = {0: "0.55", **{e: palette[k % len(palette)] for k, e in enumerate(x for x in exposures if x)}}
    ncols = min(4, len(detectors))
    nrows = math.ceil(len(detectors) / ncols)
    fig = Figure(figsize=(PAGE_WIDTH, 1.85 * nrows + 0.9), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True).ravel()
    for ax, det in zip(axes, detectors, strict=False):   # the grid may have spare axes
        for _, g in controls[controls["detector"] == det].groupby(["model", "split"], sort=True):
            ax.plot(g["fpr"], g["tpr"], color="0.78", lw=0.6, drawstyle="steps-post", zorder=1.5)
        d = curves[curves["detector"] == det]
        for (e, split), g in d.groupby(["exposures", "split"], sort=True):
            ax.plot(g["fpr"], g["tpr"], color=colors[e], ls=STYLES[splits.index(split) % len(STYLES)], lw=1.1,
                    drawstyle="steps-post", zorder=3 if e else 2)
        ax.plot([0, 1], [0, 1], color="0.8", lw=0.7, zorder=1)
        ax.set_title(NAMES[det])
        ax.set_aspect("equal")
    for ax in axes[len(detectors):]:
        ax.set_visible(False)
    for ax in axes[max(0, len(detectors) - ncols):len(detectors)]:   # the lowest panel of each column
        ax.set_xlabel("False-positive rate")
        ax.xaxis.set_tick_params(labelbottom=True)
    for ax in axes[::ncols]:
        ax.set_ylabel("True-positive rate")
    handles = [Line2D([], [], color=colors[e], lw=1.5, label=_exposure_label(e)) for e in exposures]
    handles += [Line2D([], [], color="0.78", lw=1.0, label=f"controls ({controls['model'].nunique()})")] \
        if len(controls) else []
    handles += [Line2D([], [], color="0.3", ls=STYLES[k % len(STYLES)], label=f"split {s}")
                for k, s in enumerate(splits)]
    _legend(fig, handles, ncols=min(len(handles), 7))
    return fig
