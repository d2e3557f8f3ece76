"""QuestionInspector driven headlessly: build it on the demo exam (and on a tiny 2 models x 2 shuffles result
frame), work its controls as a user would, and check what it renders; plus the notebook under papermill."""
from __future__ import annotations

import numpy as np
import pytest
from paths import REPO

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.demo import load_population
from mcqa_toolkit.items import Item, ItemSet
from mcqa_toolkit.records.columns import records_frame
from mcqa_toolkit.records.factory import make_record, run_fields
from mcqa_toolkit.report.inspector import QuestionInspector, filter_items, item_html, outcome_by_item, responses_frame

NOTEBOOK = REPO / "notebooks" / "inspect_questions.ipynb"
MODELS = ("model-a", "model-b")


@pytest.fixture(scope="module")
def demo():
    return load("demo")


@pytest.fixture(scope="module")
def human_p():
    return load_population().proportion_correct()


def _outcome_plan(k: int) -> tuple[bool, bool]:
    """Per-shuffle correctness of model-a on the k-th pt item: right in both, wrong in both, or mixed."""
    return [(True, True), (False, False), (True, False)][k % 3]


@pytest.fixture(scope="module")
def results(demo):
    """Schema records for the 66 pt items: 2 models x 1 strategy x 2 shuffles (shuffle 1 reverses the options)."""
    rows = []
    for k, it in enumerate(demo.filter(language="pt")):
        n = it.n_options
        for model in MODELS:
            for shuffle in (0, 1):
                perm = list(range(n)) if shuffle == 0 else list(range(n))[::-1]
                right = _outcome_plan(k)[shuffle] if model == "model-a" else True
                choice = it.answer if right else (it.answer + 1) % n
                probs = np.full(n, 0.1 / (n - 1))
                probs[choice] = 0.9
                run = run_fields(run_id=f"{model}__demo__pt__S1", model=model, dataset="demo", strategy="S1",
                                 strategy_hash="x", method="first_token")
                rows.append(make_record(it, run, shuffle=shuffle, permutation=perm, choice=choice,
                                        option_scores=np.log(probs), n_prompt_tokens=10, n_forwarded_tokens=10,
                                        seconds=0.01))
    return records_frame(rows)


def test_pure_functions(demo, results):
    outcomes = outcome_by_item(results, "model-a", "S1")
    assert outcomes.value_counts().to_dict() == {"correct": 22, "incorrect": 22, "mixed": 22}
    assert len(filter_items(demo, language="es", subject=None)) == 66
    assert len(filter_items(demo, outcomes, "correct", language="pt")) == 22
    assert len(filter_items(demo, None, "correct")) == 0
    frame = responses_frame(results[results.item_id == "demo-bio-01-pt"], demo["demo-bio-01-pt"])
    assert len(frame) == 4 and set(frame.choice_letter) == {"D"}
    assert frame.filter(like="p_").sum(axis=1).round(6).eq(1).all()


def test_item_html_escapes_and_marks_key_and_annulled():
    it = Item("x1", "t", "T", "Is <b>2 & 2</b> four?", ("<no>", "yes"), answer=1, irt=None)
    html = item_html(it)
    assert "&lt;b&gt;2 &amp; 2&lt;/b&gt;" in html and "&lt;no&gt;" in html and "<b>2" not in html
    assert html.count("mcqa-key") == 1 and 'mcqa-key" style' in html.split("yes")[0]
    assert "IRT parameters: unknown" in html and "human proportion correct: unknown" in html
    annulled = item_html(it.with_(answer=None))
    assert "ANNULLED" in annulled and "mcqa-key" not in annulled
    ins = QuestionInspector(ItemSet([it.with_(answer=None)]))
    assert "ANNULLED" in ins.question.value and ins.counter.value == "1 / 1"


def test_item_html_other_answer_types():
    multi = Item("m", "t", "T", "Pick two", ("a", "b", "c"), answer=(0, 2), answer_type="multi")
    assert item_html(multi).count('class="mcqa-option mcqa-key"') == 2
    tf = Item("tf", "t", "T", "True or false?", ("s1", "s2"), answer=(True, False), answer_type="truefalse")
    assert "✔ true" in item_html(tf) and "✘ false" in item_html(tf)
    short = Item("s", "t", "T", "Name it", (), answer="Rome <city>", answer_type="short")
    assert "Expected answer" in item_html(short) and "Rome &lt;city&gt;" in item_html(short)


def test_navigation_on_demo(demo, human_p):
    ins = QuestionInspector(demo, human_p=human_p)
    assert ins.counter.value == "1 / 264" and ins.prev_button.disabled
    ins.filter_widgets["language"].value = "pt"
    assert ins.counter.value == "1 / 66" and len(ins.filtered) == 66
    ins.next_button.click()
    ins.next_button.click()
    item = ins.current
    assert ins.counter.value == "3 / 66" and item.item_id == "demo-bio-03-pt"
    assert item.stem in ins.question.value
    key_html = ins.question.value.split('class="mcqa-option mcqa-key"')[1].split("</li>")[0]
    assert item.options[item.answer] in key_html and "✔ key" in key_html
    assert f"a = {item.irt[0]:.2f}" in ins.question.value
    assert f"human proportion correct: {human_p[item.parallel_id]:.3f}" in ins.question.value
    assert ins.translations.value.count('class="mcqa-translation"') == 4
    for lang in ("pt", "es", "it", "en"):
        assert f"{item.parallel_id}-{lang}" in ins.translations.value
    ins.prev_button.click()
    assert ins.counter.value == "2 / 66"
    ins.filter_widgets["language"].value = "it"  # the same question stays on screen, now in Italian
    assert ins.current.item_id == "demo-bio-02-it"
    ins.filter_widgets["subject"].value = "physics"
    assert {it.subject for it in ins.filtered} == {"physics"} and ins.counter.value.startswith("1 / ")


def test_filters_show_all_not_an_empty_box(demo, results):
    """ipywidgets shows a Dropdown whose value is None as an empty box: "all" must be a real selection."""
    ins = QuestionInspector(demo, results)
    dropdowns = [*ins.filter_widgets.values(), ins.outcome_dropdown]
    assert [(dd.index, dd.label) for dd in dropdowns] == [(0, "all")] * 4 + [(0, "any")]
    ins.set_filter(language="pt", outcome="mixed")
    assert ins.filter_widgets["language"].label == "pt" and len(ins.filtered) == 22
    ins.set_filter(language=None, outcome=None)
    assert [(dd.index, dd.label) for dd in dropdowns] == [(0, "all")] * 4 + [(0, "any")]
    assert len(ins.filtered) == 264
    ins.filter_widgets["year"].index = 0  # what picking "all" in the browser does
    assert ins.filter_widgets["year"].label == "all" and len(ins.filtered) == 264


def test_jump_to_id(demo):
    ins = QuestionInspector(demo)
    ins.jump_text.value = "demo-che-02-es"  # what pressing Enter in the box does
    assert ins.current.item_id == "demo-che-02-es" and ins.message.value == ""
    ins.jump_text.value = "nope"
    ins.go_button.click()
    assert "No item" in ins.message.value and ins.current.item_id == "demo-che-02-es"
    ins.set_filter(language="en")
    assert ins.goto("demo-phy-03") and ins.current.item_id == "demo-phy-03-en"  # a parallel id
    assert not ins.goto("demo-phy-03-pt") and "hidden by the current filters" in ins.message.value


def test_results_filters_and_chart(demo, results):
    ins = QuestionInspector(demo, results)
    assert ins.run_dropdown.value == ("model-a", "S1")
    ins.set_filter(language="pt")
    assert len(ins.filtered) == 66
    ins.outcome_dropdown.value = "correct"
    assert len(ins.filtered) == 22 and ins.counter.value == "1 / 22"
    ins.outcome_dropdown.value = "incorrect"
    assert len(ins.filtered) == 22
    assert all(not r for r in results[results.item_id.isin(ins.filtered.ids) & (results.model == "model-a")].correct)
    ins.set_filter(model="model-b")  # model-b is always right
    assert len(ins.filtered) == 0 and ins.current is None
    assert "No item matches" in ins.question.value and ins.counter.value == "0 / 0"
    ins.next()
    ins.set_filter(model="model-a", outcome="mixed")
    item = ins.current
    html = ins.responses.value
    assert "model-a · S1" in html and "model-b · S1" in html and html.count("✔") + html.count("✘") == 4
    wrong = "ABCDE"[(item.answer + 1) % item.n_options]
    assert f"{wrong} ✘" in html
    axes = [ax for ax in ins.figure.axes if ax.axison]
    assert len(axes) == 2  # one grouped chart per model · strategy
    assert len(axes[0].patches) == 2 * item.n_options + 1  # bars per shuffle, plus the key band
    assert [t.get_text()[0] for t in axes[0].get_xticklabels()] == list(item.letters)
    assert ins.plot.outputs[0]["data"]["image/png"]
    ins.filter_widgets["language"].value = "en"  # no results in English: the outcome filter leaves nothing
    assert "No item matches" in ins.question.value and "outcome" in ins.question.value


def test_set_filter_rejects_unknown_and_displays(demo):
    ins = QuestionInspector(demo)
    with pytest.raises(ValueError):
        ins.set_filter(colour="red")
    with pytest.raises(ValueError):
        ins.set_filter(outcome="correct")
    with pytest.raises(ValueError, match="not one of"):
        ins.set_filter(language="fr")
    assert ins.counter.value == "1 / 264"
    assert "application/vnd.jupyter.widget-view+json" in ins._repr_mimebundle_()


@pytest.mark.notebooks
def test_notebook_runs_with_papermill(tmp_path):
    """Exploring an exam before any run: no results folder, the dataset named (without runs there is no run folder
    to take it from)."""
    import papermill as pm

    out = tmp_path / "inspect.ipynb"
    pm.execute_notebook(str(NOTEBOOK), str(out), kernel_name="python3", cwd=str(NOTEBOOK.parent),
                        parameters={"RUNS_DIR": str(tmp_path / "no-such-dir"), "DATASET": "demo", "LANGUAGE": "pt"},
                        progress_bar=False)
    import nbformat

    cells = nbformat.read(out, as_version=4).cells
    text = "".join(o.get("text", "") for c in cells if c.cell_type == "code" for o in c.outputs)
    assert "No model results" in text
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in cells[-3].outputs)
    headline = eval(cells[-1].outputs[0]["data"]["text/plain"])  # the recorded dict of headline numbers
    assert headline == {"items": 264, "shown": 66, "languages": ["en", "es", "it", "pt"], "records": 0}


def test_toggle_a_models_results(demo, results):
    ins = QuestionInspector(demo, results).set_filter(language="pt")
    panels = lambda: [ax for ax in ins.figure.axes if ax.axison]  # noqa: E731
    assert ins.shown_runs == [("model-a", "S1"), ("model-b", "S1")] and len(panels()) == 2
    ins.run_toggles[("model-b", "S1")].value = False  # what clicking the toggle button does
    assert ins.shown_runs == [("model-a", "S1")] and "model-b" not in ins.responses.value
    assert "model-a · S1" in ins.responses.value and len(panels()) == 1
    assert ins.run_toggles[("model-b", "S1")].icon == "" and ins.run_toggles[("model-a", "S1")].icon == "check"
    ins.next()  # a hidden run stays hidden on the next question
    assert "model-b" not in ins.responses.value and len(panels()) == 1
    ins.show("model-a", shown=False)
    assert "Every run is hidden" in ins.responses.value and ins.figure is None and ins.plot.outputs == ()
    ins.show("model-b", "S1")
    assert "model-b · S1" in ins.responses.value and "model-a" not in ins.responses.value
    with pytest.raises(ValueError, match="no results of 'model-z'"):
        ins.show("model-z")
