"""QuestionInspector: browse an exam item by item in JupyterLab, with translations, IRT and model responses.

The pure functions (`filter_items`, `outcome_by_item`, `item_html`, `parallel_html`, `responses_frame`,
`responses_html`, `probs_figure`) decide what is shown; `QuestionInspector` only wires them to ipywidgets,
so everything except the pixels is testable without a browser. The bar chart is drawn on a bare matplotlib
`Figure` (never pyplot) and stored as PNG in an `Output` widget, which works with or without a kernel.
"""
from __future__ import annotations

import base64
import io
import math
from html import escape
from typing import Any, Mapping

import ipywidgets as w
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.report.responses import responses_frame, responses_html  # noqa: F401  (part of the API)

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442")
KEY_STYLE = "background:#DCEBF7;border-left:4px solid #0072B2;font-weight:bold;"
OUTCOMES = {"correct": "correct in every shuffle", "incorrect": "wrong in every shuffle",
            "mixed": "right in some shuffles only"}
ANNULLED_HTML = ('<div class="mcqa-annulled" style="border:2px dashed #D55E00;padding:4px 8px;margin:4px 0">'
                 "<b>ANNULLED</b>: no key (annulled by the exam authority); it counts as wrong for every model "
                 "and is usually left out of scores.</div>")
FILTER_FIELDS = {"source": "Dataset", "language": "Language", "subject": "Subject", "year": "Year"}
MAX_GROUPED_SHUFFLES = len(OKABE_ITO)  # beyond this, bars show the mean and dots the single shuffles


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
            for letter, text, (is_key, badge) in zip(item.letters, item.options, _key_marks(item))]
    return '<ul style="padding-left:0;margin:4px 0">' + "".join(rows) + "</ul>"


def _annulled_html(item: Item) -> str:
    return "" if item.answer is not None else ANNULLED_HTML


def item_html(item: Item, human_p: float | None = None) -> str:
    """The item as HTML: header, stem, options with the key highlighted, IRT parameters and human p."""
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
            f'{" · " + meta if meta else ""}</div></div>')


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
    for ax, ((model, strategy), g) in zip(axes, runs):
        probs = g[[f"p_{c}" for c in item.letters]].to_numpy(dtype=float)
        for i, (is_key, _) in enumerate(marks):
            if is_key:
                ax.axvspan(i - 0.45, i + 0.45, color="#BBBBBB", alpha=0.35, lw=0)
        if np.isnan(probs).all():
            ax.text(0.5, 0.5, "no option probabilities\n(generation method)", ha="center", va="center",
                    transform=ax.transAxes)
        elif len(g) <= MAX_GROUPED_SHUFFLES:
            width = 0.8 / len(g)
            for k, (shuffle, row) in enumerate(zip(g["shuffle"], probs)):
                ax.bar(x - 0.4 + width * (k + 0.5), row, width, color=OKABE_ITO[k], label=f"shuffle {shuffle}")
        else:
            ax.bar(x, np.nanmean(probs, axis=0), 0.6, color="#56B4E9", label="mean over shuffles")
            jitter = np.random.default_rng(0).uniform(-0.2, 0.2, probs.shape)
            ax.scatter(x + jitter, probs, s=8, color="#000000", alpha=0.6, label="one shuffle")
        ax.set_xticks(x, [f"{c}\n({b.split()[-1]})" if b else c for c, (_, b) in zip(item.letters, marks)])
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


def _png_output(fig: Figure, label: str) -> dict[str, Any]:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": base64.b64encode(buf.getvalue()).decode(), "text/plain": label}}


class QuestionInspector:
    """Browse `items` with filters, navigation, translations, IRT/human p and (optionally) model responses.

    `results`: a frame with the `run.columns.COLUMNS` (e.g. `load_results('outputs')`); `human_p`: proportion
    correct of humans indexed by parallel_id (or item_id). The notebook cell is just `QuestionInspector(items)`.
    """

    def __init__(self, items: ItemSet, results: pd.DataFrame | None = None, human_p: pd.Series | None = None):
        self.items = items if isinstance(items, ItemSet) else ItemSet(items)
        self.results = results if results is not None and len(results) else None
        self.human_p = human_p
        self.filtered = self.items
        self.figure: Figure | None = None
        self._pos = 0
        self._hold = False
        self._groups = self.items.by_parallel_id()
        self._by_item = dict(tuple(self.results.groupby("item_id", sort=False))) if self.results is not None else {}
        self._outcomes: dict[tuple[str, str], pd.Series] = {}
        self._build()
        self._apply_filters()

    # ---- construction ----------------------------------------------------------------------------
    def _build(self) -> None:
        style, lay = {"description_width": "initial"}, w.Layout(width="auto")
        self.filter_widgets: dict[str, w.Dropdown] = {}
        for field, label in FILTER_FIELDS.items():
            values = sorted({getattr(it, field) for it in self.items} - {None, ""}, key=str)
            self.filter_widgets[field] = w.Dropdown(options=[("all", None)] + [(str(v), v) for v in values],
                                                    value=None, description=label, style=style, layout=lay)
        controls = list(self.filter_widgets.values())
        self.run_dropdown = self.outcome_dropdown = None
        if self.results is not None:
            pairs = self.results[["model", "strategy"]].drop_duplicates().itertuples(index=False)
            runs = [(f"{m} · {s}", (m, s)) for m, s in pairs]
            self.run_dropdown = w.Dropdown(options=runs, value=runs[0][1], description="Model · strategy",
                                           style=style, layout=lay)
            self.outcome_dropdown = w.Dropdown(options=[("any", None)] + [(v, k) for k, v in OUTCOMES.items()],
                                               value=None, description="Outcome", style=style, layout=lay)
            controls += [self.run_dropdown, self.outcome_dropdown]
        for c in controls:
            c.observe(lambda _change: self._apply_filters() if not self._hold else None, names="value")
        self.prev_button = w.Button(description="◀ prev", layout=w.Layout(width="80px"))
        self.next_button = w.Button(description="next ▶", layout=w.Layout(width="80px"))
        self.counter = w.Label()
        self.jump_text = w.Text(placeholder="item id or parallel id", description="Go to", continuous_update=False,
                                style=style)
        self.go_button = w.Button(description="Go", layout=w.Layout(width="50px"))
        self.prev_button.on_click(lambda _b: self.prev())
        self.next_button.on_click(lambda _b: self.next())
        self.go_button.on_click(lambda _b: self.goto(self.jump_text.value))
        self.jump_text.observe(lambda ch: self.goto(ch["new"]) if ch["new"].strip() else None, names="value")
        self.message, self.question = w.HTML(), w.HTML()
        self.translations, self.responses, self.plot = w.HTML(), w.HTML(), w.Output()
        parts: list[w.Widget] = [
            w.HBox(controls, layout=w.Layout(flex_flow="row wrap")),
            w.HBox([self.prev_button, self.counter, self.next_button, self.jump_text, self.go_button]),
            self.message, self.question, w.HTML("<h4>Translations</h4>"), self.translations]
        if self.results is not None:
            parts += [w.HTML("<h4>Model responses</h4>"), self.responses, self.plot]
        self.widget = w.VBox(parts)

    # ---- state -----------------------------------------------------------------------------------
    @property
    def current(self) -> Item | None:
        """The item on screen, None when the filters leave nothing."""
        return self.filtered[self._pos] if len(self.filtered) else None

    def set_filter(self, **criteria: Any) -> "QuestionInspector":
        """Set filters by name (source, language, subject, year, model, strategy, outcome); None means all."""
        unknown = set(criteria) - set(FILTER_FIELDS) - {"model", "strategy", "outcome"}
        if unknown:
            raise ValueError(f"unknown filter(s) {sorted(unknown)}")
        if self.results is None and {"model", "strategy", "outcome"} & set(criteria):
            raise ValueError("model/strategy/outcome filters need results")
        wanted = [(self.filter_widgets[f], v) for f, v in criteria.items() if f in FILTER_FIELDS]
        if "model" in criteria or "strategy" in criteria:
            model, strategy = self.run_dropdown.value
            wanted.append((self.run_dropdown, (criteria.get("model", model), criteria.get("strategy", strategy))))
        if "outcome" in criteria:
            wanted.append((self.outcome_dropdown, criteria["outcome"]))
        for dropdown, value in wanted:
            allowed = [v for _, v in dropdown.options]
            if value not in allowed:
                raise ValueError(f"{dropdown.description} {value!r} is not one of {allowed}")
        self._hold = True  # one refresh for all the changes, not one per dropdown
        try:
            for dropdown, value in wanted:
                dropdown.value = value
        finally:
            self._hold = False
        self._apply_filters()
        return self

    def _apply_filters(self) -> None:
        outcome = self.outcome_dropdown.value if self.outcome_dropdown is not None else None
        outcomes = None
        if outcome is not None:
            run = self.run_dropdown.value
            if run not in self._outcomes:
                self._outcomes[run] = outcome_by_item(self.results, *run)
            outcomes = self._outcomes[run]
        previous = self.current
        self.filtered = filter_items(self.items, outcomes, outcome,
                                     **{f: dd.value for f, dd in self.filter_widgets.items()})
        self._pos = 0
        if previous is not None:  # stay on the same question (or its translation) when it survives the filters
            same = [i for i, it in enumerate(self.filtered) if it.item_id == previous.item_id] or \
                   [i for i, it in enumerate(self.filtered) if it.parallel_id == previous.parallel_id]
            self._pos = same[0] if same else 0
        self.message.value = ""
        self._render()

    def next(self) -> None:
        """Show the next item of the filtered set (stays on the last one)."""
        self._move(self._pos + 1)

    def prev(self) -> None:
        """Show the previous item (stays on the first one)."""
        self._move(self._pos - 1)

    def _move(self, pos: int) -> None:
        self._pos = max(0, min(pos, len(self.filtered) - 1))
        self.message.value = ""
        self._render()

    def goto(self, item_id: str) -> bool:
        """Jump to an item id, or a parallel id (in the current language if possible); False with a message if not."""
        key = str(item_id).strip()
        target = self.items[key] if key in self.items else None
        if target is None and key in self._groups:
            group = self._groups[key]
            lang = self.current.language if self.current is not None else ""
            target = group.get(lang, next(iter(group.values())))
        if target is None:
            return self._warn(f"No item with id or parallel id “{key}”.")
        if target.item_id not in self.filtered:
            return self._warn(f"“{target.item_id}” is hidden by the current filters (set them to “all”).")
        self._pos = self.filtered.ids.index(target.item_id)
        self.message.value = ""
        self._render()
        return True

    def _warn(self, text: str) -> bool:
        self.message.value = f'<span style="color:#D55E00">{escape(text)}</span>'
        return False

    # ---- rendering -------------------------------------------------------------------------------
    def _human_p(self, item: Item) -> float | None:
        hp = self.human_p
        keys = (item.parallel_id, item.item_id) if hp is not None else ()
        found = [hp[k] for k in keys if k in hp.index and pd.notna(hp[k])]
        return float(found[0]) if found else None

    def _render(self) -> None:
        n, item = len(self.filtered), self.current
        self.counter.value = f"{self._pos + 1} / {n}" if n else "0 / 0"
        self.prev_button.disabled = item is None or self._pos == 0
        self.next_button.disabled = item is None or self._pos >= n - 1
        self.figure, self.plot.outputs = None, ()
        if item is None:
            active = [f"{k} = {dd.value}" for k, dd in self.filter_widgets.items() if dd.value is not None]
            if self.outcome_dropdown is not None and self.outcome_dropdown.value is not None:
                active.append(f"outcome = {self.outcome_dropdown.value} for {' · '.join(self.run_dropdown.value)}")
            self.question.value = (f'<div class="mcqa-empty"><b>No item matches the current filters</b> '
                                   f'({escape(", ".join(active))}). Set a filter back to “all” to widen it.</div>')
            self.translations.value = self.responses.value = ""
            return
        self.question.value = item_html(item, self._human_p(item))
        self.translations.value = parallel_html(self._groups.get(item.parallel_id, {}), item.language)
        if self.results is not None:
            frame = responses_frame(self._by_item.get(item.item_id), item)
            self.responses.value = responses_html(frame, self.run_dropdown.value)
            if not frame.empty:
                self.figure = probs_figure(frame, item)
                self.plot.outputs = (_png_output(self.figure, f"option probabilities of {item.item_id}"),)

    def display(self) -> None:
        """Show the inspector in the notebook (same as leaving it as the last expression of a cell)."""
        from IPython.display import display

        display(self.widget)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return self.widget._repr_mimebundle_(**kwargs)
