"""What the QuestionInspector shows, as pure functions of items and records (no widgets): the item and its
translations as HTML (every question type: key(s), true/false per statement, the expected short answer) and the
option-probability chart as a bare matplotlib `Figure` (never pyplot). The model responses table is
report.responses. Everything except the pixels is testable without a browser.
"""
from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping
from html import escape
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mcqa_toolkit.items import Item, ItemSet

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
KEY_STYLE = "background:#DCEBF7;border-left:4px solid #0072B2;font-weight:bold;"
OUTCOME_FILTERS = {"correct": "correct in every shuffle", "incorrect": "wrong in every shuffle",
            "mixed": "right in some shuffles only"}
ANNULLED_HTML = ('<div class="mcqa-annulled" style="border:2px dashed #D55E00;padding:4px 8px;margin:4px 0">'
                 "<b>ANNULLED</b>: no key (annulled by the exam authority); it counts as wrong for every model "
                 "and is usually left out of scores.</div>")
FILTER_FIELDS = {"source": "Dataset", "language": "Language", "subject": "Subject", "year": "Year"}
MAX_GROUPED_SHUFFLES = len(OKABE_ITO)  # beyond this, bars show the mean and dots the single shuffles
PNG_DPI = 90  # the chart in the widget: a 10.8 x 3.8 in figure (two panels) is 972 x 342 px


def filter_items(items: ItemSet, outcomes: pd.Series | None = None, outcome: str | None = None,
                 **criteria: Any) -> ItemSet:
    """Items matching every non-None criterion and, when `outcome` is given, whose `outcomes[item_id]` equals it."""
    kept = items.filter(**{k: v for k, v in criteria.items() if v is not None})
    if outcome is None:
        return kept
    allowed = set(outcomes.index[outcomes == outcome]) if outcomes is not None else set()
    return kept.filter(lambda it: it.item_id in allowed)


def outcome_by_item(results: pd.DataFrame, model: str, strategy: str) -> pd.Series:
    """item_id -> 'correct' (all shuffles right) | 'incorrect' (none right) | 'mixed', for one model/strategy."""
    sub = results[(results["model"] == model) & (results["strategy"] == strategy)]
    share = sub["correct"].astype(float).groupby(sub["item_id"]).mean()
    return pd.Series(np.select([share == 1, share == 0], ["correct", "incorrect"], "mixed"), index=share.index,
                     name="outcome")


def _key_marks(item: Item) -> list[tuple[bool, str]]:
    """(is highlighted, badge) per option: the key(s), or the truth value of each true/false statement."""
    ans = item.answer
    if item.answer_type == "truefalse" and isinstance(ans, tuple):
        return [(bool(v), "✔ true" if v else "✘ false") for v in ans]
    keys = {ans} if isinstance(ans, int) else set(ans) if isinstance(ans, tuple) else set()
    return [(i in keys, "✔ key" if i in keys else "") for i in range(item.n_options)]


def _options_html(item: Item) -> str:
    if item.answer_type == "short":
        key = escape(str(item.answer))
        return f'<p><b>Expected answer:</b> <span class="mcqa-key" style="{KEY_STYLE}">{key}</span></p>'
    rows = [f'<li class="mcqa-option{" mcqa-key" if is_key else ""}" style="list-style:none;padding:2px 6px;'
            f'{KEY_STYLE if is_key else ""}"><b>{letter})</b> {escape(text)} '
            f'<span style="color:#0072B2">{badge}</span></li>'
            for letter, text, (is_key, badge) in zip(item.letters, item.options, _key_marks(item), strict=True)]
    return '<ul style="padding-left:0;margin:4px 0">' + "".join(rows) + "</ul>"


def _annulled_html(item: Item) -> str:
    return "" if item.answer is not None else ANNULLED_HTML


def dif_html(item: Item, dif: pd.DataFrame | None) -> str:
    """The question's DIF class (`report.dif.read_classes` rows): for an item of a focal language, its class
    against the reference; for the reference language's item, the class of each other language. "" when the
    question was not analysed."""
    if dif is None or dif.empty:
        return ""
    rows = dif[dif["parallel_id"] == item.parallel_id]
    if not rows.empty and item.exam_language != rows["reference"].iloc[0]:
        rows = rows[rows["focal"] == item.exam_language]
    if rows.empty:
        return ""
    parts = []
    for r in rows.sort_values("focal").itertuples(index=False):
        delta = "no information" if pd.isna(r.delta_mh) else f"Δ = {r.delta_mh:+.2f}".replace("-", "−")
        flag = ", flagged after BH" if bool(r.flag_bh) else ""
        parts.append(f"{escape(str(r.focal))}: <b>class {escape(str(r.ets_class))}</b> ({delta}{flag})")
    simulated = " · <i>on SIMULATED persons, not the runs</i>" if (rows["source"] == "simulated").any() else ""
    return (f'<div class="mcqa-dif" style="margin-top:2px"><b>DIF</b> (Mantel-Haenszel, ETS class vs '
            f'{escape(str(rows["reference"].iloc[0]))}): {"; ".join(parts)}{simulated}</div>')


def item_html(item: Item, human_p: float | None = None, dif: str = "") -> str:
    """The item as HTML: header, stem, options with the key highlighted, IRT parameters, human p and the DIF
    class line (`dif_html`) when given."""
    head = " · ".join(escape(str(x)) for x in (item.source, item.exam, item.year, item.subject, item.language)
                      if x not in (None, ""))
    notes = [f"type {item.answer_type}", f"{item.points:g} point(s)"]
    if item.has_image:
        notes.append("<b>has an image not shown here</b>")
    irt = ("3PL a = {:.2f}, b = {:.2f}, c = {:.2f}".format(*item.irt) if item.irt else "IRT parameters: unknown")
    p = f"human proportion correct: {human_p:.3f}" if human_p is not None else "human proportion correct: unknown"
    meta = ", ".join(f"{escape(str(k))}: {escape(str(v))}" for k, v in item.meta.items() if len(str(v)) <= 80)
    return (f'<div class="mcqa-item"><h3 style="margin:2px 0">{escape(item.item_id)}</h3>'
            f'<div style="color:#555">{head} · {" · ".join(notes)}</div>{_annulled_html(item)}'
            f'<p class="mcqa-stem" style="white-space:pre-wrap">{escape(item.stem)}</p>{_options_html(item)}'
            f'<div class="mcqa-params"><b>{irt}</b> · <b>{p}</b>'
            f'{" · " + meta if meta else ""}</div>{dif}</div>')


def parallel_html(group: Mapping[str, Item], current_language: str = "") -> str:
    """The translations of one question side by side (one column per language), the key highlighted."""
    if len(group) < 2:
        return "<i>No translations of this question in the loaded items.</i>"
    cols = []
    for lang, it in group.items():
        shown = " (shown above)" if lang == current_language else ""
        cols.append(f'<div class="mcqa-translation" style="flex:1;min-width:220px;border:1px solid #ccc;'
                    f'padding:4px 8px"><b>{escape(lang)}</b>{shown} <small>{escape(it.item_id)}</small>'
                    f'{_annulled_html(it)}<p style="white-space:pre-wrap">{escape(it.stem)}</p>'
                    f'{_options_html(it)}</div>')
    return '<div style="display:flex;gap:8px;flex-wrap:wrap">' + "".join(cols) + "</div>"


def probs_figure(frame: pd.DataFrame, item: Item) -> Figure:
    """Option probabilities per shuffle in original option order: one panel per model · strategy.

    Up to 8 shuffles are grouped bars (Okabe-Ito colours, one legend below); more are a mean bar with one dot
    per shuffle. A grey band, not a colour, marks the key so it survives colour-blindness and print.
    """
    runs = list(frame.groupby(["model", "strategy"], sort=False))
    ncols = min(len(runs), 2)
    nrows = math.ceil(len(runs) / ncols)
    fig = Figure(figsize=(max(5.4 * ncols, 7.0), 2.9 * nrows + 0.9), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True).ravel()
    x, marks = np.arange(item.n_options), _key_marks(item)
    for ax, ((model, strategy), g) in zip(axes, runs, strict=False):   # the grid may have spare axes
        probs = g[[f"p_{c}" for c in item.letters]].to_numpy(dtype=float)
        for i, (is_key, _) in enumerate(marks):
            if is_key:
                ax.axvspan(i - 0.45, i + 0.45, color="#BBBBBB", alpha=0.35, lw=0)
        if np.isnan(probs).all():
            ax.text(0.5, 0.5, "no option probabilities\n(generation method)", ha="center", va="center",
                    transform=ax.transAxes)
        elif len(g) <= MAX_GROUPED_SHUFFLES:
            width = 0.8 / len(g)
            for k, (shuffle, row) in enumerate(zip(g["shuffle"], probs, strict=True)):
                ax.bar(x - 0.4 + width * (k + 0.5), row, width, color=OKABE_ITO[k], label=f"shuffle {shuffle}")
        else:
            ax.bar(x, np.nanmean(probs, axis=0), 0.6, color="#56B4E9", label="mean over shuffles")
            jitter = np.random.default_rng(0).uniform(-0.2, 0.2, probs.shape)
            ax.scatter(x + jitter, probs, s=8, color="#000000", alpha=0.6, label="one shuffle")
        ax.set_xticks(x, [f"{c}\n({b.split()[-1]})" if b else c for c, (_, b) in zip(item.letters, marks, strict=True)])
        ax.set_ylim(0, 1)
        ax.set_title(f"{model} · {strategy}", fontsize=10)
    for ax in axes[len(runs):]:
        ax.set_axis_off()
    for ax in axes[::ncols]:
        ax.set_ylabel("option probability")
    handles, labels = max((ax.get_legend_handles_labels() for ax in axes), key=lambda hl: len(hl[0]))
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(handles), 8), fontsize=8, frameon=False)
    fig.suptitle(f"{item.item_id}: option probabilities per shuffle (original option order)", fontsize=11)
    return fig


def png_output(fig: Figure, label: str) -> dict[str, Any]:
    """A figure as an Output widget's display_data (PNG, base64)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI)
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": base64.b64encode(buf.getvalue()).decode(), "text/plain": label}}
