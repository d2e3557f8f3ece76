"""QuestionInspector: browse an exam item by item in JupyterLab, with translations, IRT and model responses.

The pure functions of `report.inspector_views` decide what is shown; `QuestionInspector` only wires them to
ipywidgets, so everything except the pixels is testable without a browser (tests/report/test_browser.py checks the
pixels: the widget rendered by JupyterLab in headless Chromium). The bar chart is stored as PNG in an
`Output` widget, which works with or without a kernel.
"""
from __future__ import annotations

from html import escape
from typing import Any

import ipywidgets as w
import pandas as pd
from matplotlib.figure import Figure

from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.report.inspector_views import (
    FILTER_FIELDS,
    OUTCOME_FILTERS,
    dif_html,
    filter_items,
    item_html,
    outcome_by_item,
    parallel_html,
    png_output,
    probs_figure,
)
from mcqa_toolkit.report.responses import responses_frame, responses_html

# The value of a dropdown's "all" / "any" entry. Not None: ipywidgets treats a None value as "nothing
# selected", so the browser would show an empty box instead of "all" (tests/report/test_browser.py caught it).
ALL = ""


class QuestionInspector:
    """Browse `items` with filters, navigation, translations, IRT/human p and (optionally) model responses.

    `results`: a frame with the `records.columns.COLUMNS` (e.g. `load_results('outputs')`); `human_p`: proportion
    correct of humans indexed by parallel_id (or item_id); `dif`: the DIF classes of notebooks/17_dif
    (`report.dif.read_classes`), shown under the item. The notebook cell is just `QuestionInspector(items)`.
    """

    def __init__(self, items: ItemSet, results: pd.DataFrame | None = None, human_p: pd.Series | None = None,
                 dif: pd.DataFrame | None = None):
        self.items = items if isinstance(items, ItemSet) else ItemSet(items)
        self.results = results if results is not None and len(results) else None
        self.human_p = human_p
        self.dif = dif
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
            self.filter_widgets[field] = w.Dropdown(options=[("all", ALL)] + [(str(v), v) for v in values],
                                                    value=ALL, description=label, style=style, layout=lay)
        controls = list(self.filter_widgets.values())
        self.run_dropdown = self.outcome_dropdown = None
        self.run_toggles: dict[tuple[str, str], w.ToggleButton] = {}
        if self.results is not None:
            pairs = self.results[["model", "strategy"]].drop_duplicates().itertuples(index=False)
            runs = [(f"{m} · {s}", (m, s)) for m, s in pairs]
            for label, run in runs:  # show or hide one model · strategy in the responses table and chart
                self.run_toggles[run] = w.ToggleButton(value=True, description=label, icon="check",
                                                       tooltip=f"show or hide the results of {label}",
                                                       layout=w.Layout(width="auto"))
                self.run_toggles[run].observe(self._on_toggle, names="value")
            self.run_dropdown = w.Dropdown(options=runs, value=runs[0][1], description="Model · strategy",
                                           style=style, layout=lay)
            self.outcome_dropdown = w.Dropdown(options=[("any", ALL)] + [(v, k) for k, v in OUTCOME_FILTERS.items()],
                                               value=ALL, description="Outcome", style=style, layout=lay)
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
            toggles = w.HBox([w.Label("Show:"), *self.run_toggles.values()], layout=w.Layout(flex_flow="row wrap"))
            parts += [w.HTML("<h4>Model responses</h4>"), toggles, self.responses, self.plot]
        self.widget = w.VBox(parts)

    def _on_toggle(self, change: dict[str, Any]) -> None:
        change["owner"].icon = "check" if change["new"] else ""
        self._render()

    # ---- state -----------------------------------------------------------------------------------
    @property
    def shown_runs(self) -> list[tuple[str, str]]:
        """The (model, strategy) runs whose results are shown (all of them until one is toggled off)."""
        return [run for run, toggle in self.run_toggles.items() if toggle.value]

    def show(self, model: str, strategy: str | None = None, shown: bool = True) -> QuestionInspector:
        """Show (or hide, `shown=False`) a model's results: every strategy of it, or just `strategy`."""
        runs = [r for r in self.run_toggles if r[0] == model and strategy in (None, r[1])]
        if not runs:
            raise ValueError(f"no results of {model!r}{f' · {strategy!r}' if strategy else ''}; runs: "
                             f"{list(self.run_toggles)}")
        for run in runs:
            self.run_toggles[run].value = shown
        return self

    @property
    def current(self) -> Item | None:
        """The item on screen, None when the filters leave nothing."""
        return self.filtered[self._pos] if len(self.filtered) else None

    def set_filter(self, **criteria: Any) -> QuestionInspector:
        """Set filters by name (source, language, subject, year, model, strategy, outcome); None means all."""
        unknown = set(criteria) - set(FILTER_FIELDS) - {"model", "strategy", "outcome"}
        if unknown:
            raise ValueError(f"unknown filter(s) {sorted(unknown)}")
        if self.results is None and {"model", "strategy", "outcome"} & set(criteria):
            raise ValueError("model/strategy/outcome filters need results")
        wanted = [(self.filter_widgets[f], ALL if v is None else v) for f, v in criteria.items() if f in FILTER_FIELDS]
        if "model" in criteria or "strategy" in criteria:
            model, strategy = self._run
            wanted.append((self.run_dropdown, (criteria.get("model", model), criteria.get("strategy", strategy))))
        if "outcome" in criteria:
            wanted.append((self.outcome_dropdown, ALL if criteria["outcome"] is None else criteria["outcome"]))
        for dropdown, value in wanted:
            allowed = [v for _, v in dropdown.options]
            if value not in allowed:
                shown = [None if v == ALL else v for v in allowed]
                raise ValueError(f"{dropdown.description} {value!r} is not one of {shown}")
        self._hold = True  # one refresh for all the changes, not one per dropdown
        try:
            for dropdown, value in wanted:
                dropdown.value = value
        finally:
            self._hold = False
        self._apply_filters()
        return self

    @property
    def _run(self) -> tuple[str, str]:
        """The (model, strategy) the run dropdown shows; there is one when results are given."""
        if self.run_dropdown is None:
            raise ValueError("model/strategy/outcome filters need results")
        return self.run_dropdown.value

    @staticmethod
    def _value(dropdown: w.Dropdown) -> Any:
        """A filter dropdown's value, None for "all" / "any"."""
        return None if isinstance(dropdown.value, str) and dropdown.value == ALL else dropdown.value

    def _apply_filters(self) -> None:
        outcome = self._value(self.outcome_dropdown) if self.outcome_dropdown is not None else None
        outcomes = None
        if outcome is not None:
            run = self._run
            if run not in self._outcomes:
                self._outcomes[run] = outcome_by_item(self.results, *run)
            outcomes = self._outcomes[run]
        previous = self.current
        self.filtered = filter_items(self.items, outcomes, outcome,
                                     **{f: self._value(dd) for f, dd in self.filter_widgets.items()})
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
            lang = self.current.exam_language if self.current is not None else ""
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
        if hp is None:
            return None
        found = [hp[k] for k in (item.parallel_id, item.item_id) if k in hp.index and pd.notna(hp[k])]
        return float(found[0]) if found else None

    def _render(self) -> None:
        n, item = len(self.filtered), self.current
        self.counter.value = f"{self._pos + 1} / {n}" if n else "0 / 0"
        self.prev_button.disabled = item is None or self._pos == 0
        self.next_button.disabled = item is None or self._pos >= n - 1
        self.figure, self.plot.outputs = None, ()
        if item is None:
            active = [f"{k} = {dd.value}" for k, dd in self.filter_widgets.items() if self._value(dd) is not None]
            if self.outcome_dropdown is not None and self._value(self.outcome_dropdown) is not None:
                active.append(f"outcome = {self.outcome_dropdown.value} for {' · '.join(self._run)}")
            self.question.value = (f'<div class="mcqa-empty"><b>No item matches the current filters</b> '
                                   f'({escape(", ".join(active))}). Set a filter back to “all” to widen it.</div>')
            self.translations.value = self.responses.value = ""
            return
        self.question.value = item_html(item, self._human_p(item), dif_html(item, self.dif))
        self.translations.value = parallel_html(self._groups.get(item.parallel_id, {}), item.exam_language)
        if self.results is not None:
            records, shown = self._by_item.get(item.item_id), set(self.shown_runs)
            if not shown:
                self.responses.value = "<i>Every run is hidden: switch one on under “Show”.</i>"
                return
            if records is not None:
                records = records[[run in shown for run in zip(records["model"], records["strategy"], strict=True)]]
            frame = responses_frame(records, item)
            self.responses.value = responses_html(frame, self._run)
            if not frame.empty:
                self.figure = probs_figure(frame, item)
                self.plot.outputs = (png_output(self.figure, f"option probabilities of {item.item_id}"),)

    def display(self) -> None:
        """Show the inspector in the notebook (same as leaving it as the last expression of a cell)."""
        from IPython.display import display

        display(self.widget)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        return self.widget._repr_mimebundle_(**kwargs)
