"""The question inspector's table of model responses to one item: per model x strategy x shuffle the chosen
option (single choice) or the response of the other question types (letters, T/F per statement, the text) with
its points and status."""
from __future__ import annotations

from html import escape
from typing import Any

import numpy as np
import pandas as pd

from mcqa_toolkit.items import LETTERS, Item
from mcqa_toolkit.records.factory import decode_response

__all__ = ["responses_frame", "responses_html"]


def _response_text(item: Item, response: Any) -> str:
    """A record's normalised response for display: letters (multi), T/F per statement, the text (short)."""
    if response is None:
        return ""
    if isinstance(response, list) and all(isinstance(x, bool) for x in response):
        return " ".join("T" if x else "F" for x in response)
    if isinstance(response, list):
        return ",".join(LETTERS[int(i)] for i in response)
    text = str(response)
    return text if len(text) <= 40 else text[:39] + "…"


def responses_frame(records: pd.DataFrame | None, item: Item) -> pd.DataFrame:
    """One row per model x strategy x shuffle: chosen option (original letter), the response as text for the other
    question types, points, correctness, status, shown order, p_<letter>."""
    cols = ["model", "strategy", "shuffle", "choice", "choice_letter", "choice_position", "response",
            "points_earned", "points_possible", "correct", "status", "shown_order"] + [f"p_{x}" for x in item.letters]
    if records is None or records.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for r in records.sort_values(["model", "strategy", "shuffle"], kind="stable").itertuples(index=False):
        choice = int(r.choice)
        probs = np.asarray(r.option_probs if r.option_probs is not None else [], dtype=float)
        if probs.size != item.n_options:  # generation without scores: no probabilities to draw
            probs = np.full(item.n_options, np.nan)
        response = "" if item.answer_type == "single" else _response_text(item, decode_response(r.response))
        rows.append([r.model, r.strategy, int(r.shuffle), choice, LETTERS[choice] if choice >= 0 else "",
                     int(r.choice_position), response, float(r.points_earned), float(r.points_possible),
                     bool(r.correct), r.status, "".join(LETTERS[int(i)] for i in r.permutation), *probs])
    return pd.DataFrame(rows, columns=cols)


def responses_html(frame: pd.DataFrame, selected: tuple[str, str] | None = None) -> str:
    """Table: one row per model · strategy, one column per shuffle with the chosen original letter and ✔/✘ (for
    the other question types the response with its points and status)."""
    if frame.empty:
        return "<i>No model results for this item.</i>"
    def cell(r: Any) -> str:
        if r.choice_letter:
            text = f"{r.choice_letter} {'✔' if r.correct else '✘'}"
        elif r.response:
            text = f"{escape(r.response)} ({r.points_earned:g}/{r.points_possible:g}, {escape(r.status)})"
        else:
            text = f"— ({escape(r.status)})"
        return f'<td title="shown order {r.shown_order}" style="text-align:center">{text}</td>'

    shuffles = sorted(frame["shuffle"].unique())
    head = "".join(f"<th>shuffle {s}</th>" for s in shuffles)
    rows = []
    for (model, strategy), g in frame.groupby(["model", "strategy"], sort=False):
        by_shuffle = {r.shuffle: r for r in g.itertuples(index=False)}
        cells = [cell(by_shuffle[s]) if s in by_shuffle else "<td></td>" for s in shuffles]
        style = ' style="font-weight:bold;background:#F2F2F2"' if selected == (model, strategy) else ""
        rows.append(f"<tr{style}><td>{escape(str(model))} · {escape(str(strategy))}</td>{''.join(cells)}"
                    f"<td>{g['correct'].mean():.0%}</td></tr>")
    return (f'<div style="overflow-x:auto"><table class="mcqa-responses">'
            f'<tr><th>model · strategy</th>{head}<th>share correct</th></tr>'
            + "".join(rows) + "</table><small>Letters are in the original option order; hover a cell for the "
            "order shown to the model.</small></div>")
