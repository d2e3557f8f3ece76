"""datasets.agieval: AGIEval task files (fixtures written here in the release's layout: passages "", null and long,
"(A)" prefixes, one string holding every option, Gaokao select-all labels, JEC-QA's one-letter lists, a cloze task),
errors naming file, record and field, the real excerpts, and a run through run() whose multi-answer records are
scored by exact set match. The release's label defects are rewritten here in our words: gaokao-mathqa's two answers
in one string ("AD") are a multiple-answer item; jec-qa-ca's label '。' and jec-qa-kd's empty list leave their record
out, named, and the rest of the file loads."""
import json
import warnings

import numpy as np
import pytest
from lookup_backend import LookupBackend, seeded_table
from paths import FIXTURES, SHARED

from mcqa_toolkit.datasets import load
from mcqa_toolkit.datasets.agieval import task_of
from mcqa_toolkit.datasets.common import UnusableRecordsWarning
from mcqa_toolkit.items import DatasetError
from mcqa_toolkit.run import run
from mcqa_toolkit.run.strategy import strategy

F = FIXTURES / "agieval"
CHOICE_TASKS = ["gaokao-physics", "jec-qa-kd", "lsat-rc", "sat-math"]


def test_tasks_languages_passages_and_options():
    items = load("agieval", path=F)
    assert len(items) == 8 and {it.subject for it in items} == {*CHOICE_TASKS, "math"}
    sat = items["agieval-sat-math-1"]
    assert (sat.language, sat.options, sat.answer, sat.stem) == ("en", ("2", "4", "7", "8"), 1,
                                                                 "If $2x + 3 = 11$, what is the value of $x$?")
    assert sat.meta["explanation"].startswith("Subtract 3")
    assert items["agieval-sat-math-2"].stem == "What is $5 \\times 6$?"                 # passage null
    rc = items["agieval-lsat-rc-1"]
    assert rc.stem.startswith("Tide pools form") and rc.stem.endswith("\n\nThe passage is mainly about")  # passage kept
    split = items["agieval-lsat-rc-2"]
    assert split.options == ("once a day", "twice a day", "once a week", "never", "every hour")
    assert split.meta["options_split"] and split.answer == 1


def test_list_labels_are_multiple_answer_items_scored_by_exact_set():
    items = load("agieval", path=F, tasks=["gaokao-physics", "jec-qa-kd"])
    single, multi = items["agieval-gaokao-physics-1"], items["agieval-gaokao-physics-2"]
    assert (single.answer_type, single.answer, single.language, single.year) == ("single", 1, "zh", 2020)
    assert (multi.answer_type, multi.answer, multi.meta["partial_credit"]) == ("multi", (0, 1), False)
    jec = items["agieval-jec-qa-kd-1"]
    assert (jec.answer_type, jec.answer, jec.year) == ("multi", (1,), None)


def test_a_cloze_task_is_a_short_answer():
    (item,) = load("agieval", path=F / "math.jsonl")
    assert (item.answer_type, item.answer, item.options, item.meta["explanation"]) == ("short", "25", (),
                                                                                       "$9 + 16 = 25$.")


def test_the_task_is_the_file_name():
    from pathlib import Path

    assert [task_of(Path(n)) for n in ("sat-en.jsonl", "sat-en-without-passage.jsonl", "agieval_sat-math_sample.jsonl",
                                       "x_gaokao-mathqa.jsonl", "custom.jsonl")] == \
        ["sat-en", "sat-en-without-passage", "sat-math", "gaokao-mathqa", "custom"]


LINE = {"passage": None, "question": "Which?", "options": ["(A)x", "(B)y", "(C)z"], "label": "A"}


@pytest.mark.parametrize("rec, field, message", [
    ({**LINE, "label": "D"}, "label", "answer 'D' is not written in letters of the options (ABC)"),
    ({**LINE, "label": ["A", 3]}, "label", "expected answer letters, got int 3"),
    ({**LINE, "label": "A+B"}, "label", "answer 'A+B' is not written in letters of the options (ABC)"),
    ({**LINE, "label": None}, "label", "expected str or list"),
    ({**LINE, "options": ["(A)x (A)y"]}, "options", "does not split into (A), (B)"),
    ({**LINE, "passage": 5}, "passage", "expected text or null"),
    ({**LINE, "options": None, "label": None}, "answer", "missing field"),
])
def test_bad_records_name_the_file_record_and_field(tmp_path, rec, field, message):
    p = tmp_path / "logiqa-en.jsonl"
    p.write_text(json.dumps(LINE) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(DatasetError) as e:
        load("agieval", path=p, strict=True)
    assert (e.value.path, e.value.record, e.value.field) == (str(p), 2, field) and message in e.value.message
    with pytest.warns(UnusableRecordsWarning):
        items = load("agieval", path=p)
    assert items.ids == ["agieval-logiqa-en-1"] and [(r.record, r.field) for r in items.skipped] == [(2, field)]


MATHQA = {"passage": None, "question": "下列函数中，既是奇函数又在(0,+∞)上单调递增的是",
          "other": {"source": "2022年新高考数学"},
          "options": ["(A)y=x^3", "(B)y=-x", "(C)y=x^2", "(D)y=2x"], "answer": None}


@pytest.mark.parametrize("label", ["AD", "A,D", "A D", "a, d", ["A", "D"], ["D", "A", "A"], "ＡＤ"])
def test_several_letters_in_one_label_are_a_multiple_answer_item(tmp_path, label):
    """gaokao-mathqa writes two correct answers as one string ("AD"): today the file stops there."""
    p = tmp_path / "gaokao-mathqa.jsonl"
    p.write_text("".join(json.dumps({**MATHQA, "label": lab}, ensure_ascii=False) + "\n" for lab in ("A", label)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnusableRecordsWarning)
        one, two = load("agieval", path=p, strict=True)
    assert (one.answer_type, one.answer) == ("single", 0)
    assert (two.answer_type, two.answer, two.meta["partial_credit"], two.language) == ("multi", (0, 3), False, "zh")


@pytest.mark.parametrize("task, label, reason", [
    ("jec-qa-ca", "。", "answer '。' is not written in letters of the options (ABCD)"),
    ("jec-qa-kd", [], "empty list of answer letters"),
    ("jec-qa-kd", "", "empty value"),
    ("gaokao-mathqa", "E", "answer 'E' is not written in letters of the options (ABCD)"),
])
def test_a_label_that_is_not_a_letter_leaves_its_record_out(tmp_path, task, label, reason):
    """jec-qa-ca has a label '。' and jec-qa-kd an empty list: the record is unusable (never guessed), the file
    loads."""
    p = tmp_path / f"{task}.jsonl"
    p.write_text("".join(json.dumps({**MATHQA, "label": lab}, ensure_ascii=False) + "\n"
                         for lab in (["B"], label, "C")))
    with pytest.warns(UnusableRecordsWarning, match="record 2"):
        items = load("agieval", path=p)
    assert items.ids == [f"agieval-{task}-1", f"agieval-{task}-3"] and [it.answer for it in items] == [(1,), 2]
    assert [(r.path, r.record, r.item_id, r.field, r.reason) for r in items.skipped] == [(str(p), 2, "", "label",
                                                                                          reason)]
    with pytest.raises(DatasetError) as e:
        load("agieval", path=p, strict=True)
    assert (e.value.record, e.value.field, e.value.message) == (2, "label", reason)


def test_folders_and_unknown_tasks(tmp_path):
    with pytest.raises(DatasetError, match=r"no <task>.jsonl file for \['lsat-ar'\]"):
        load("agieval", path=F, tasks=["sat-math", "lsat-ar"])
    (tmp_path / "my-exam.jsonl").write_text(json.dumps(LINE) + "\n")
    with pytest.raises(DatasetError, match="task 'my-exam' is not one of AGIEval's: pass language"):
        load("agieval", path=tmp_path)
    assert load("agieval", path=tmp_path, language="en")[0].item_id == "agieval-my-exam-1"


def test_runs_under_the_agieval_strategy_with_multi_answers_exact(tmp_path):
    """Generation reads one letter from the lookup model ("Resposta: <best>"): a single item is right when that is
    the key, a select-all item only when the key is that one letter (no partial credit)."""
    items = load("agieval", path=F, tasks=CHOICE_TASKS)
    table = seeded_table(items, seed=5)
    table["agieval-gaokao-physics-2"] = [np.log(0.6), np.log(0.2), np.log(0.1), np.log(0.1)]  # A of key {A, B}
    table["agieval-jec-qa-kd-1"] = [np.log(0.1), np.log(0.7), np.log(0.1), np.log(0.1)]      # B of key {B}
    records = run(items, LookupBackend(table), strategy("agieval"), tmp_path / "run", dataset="agieval",
                  progress=False)
    naive = {it.item_id: float({int(np.argmax(table[it.item_id]))} == set(np.atleast_1d(it.answer))) for it in items}
    assert dict(zip(records["item_id"], records["points_earned"], strict=True)) == naive
    by_id = records.set_index("item_id")
    assert by_id.loc["agieval-gaokao-physics-2", "status"] == "incorrect"          # a strict subset earns nothing
    assert by_id.loc["agieval-jec-qa-kd-1", "status"] == "correct"
    assert set(records["language"]) == {"en", "zh"}


needs_shared = pytest.mark.skipif(not (SHARED / "formats").is_dir(), reason="real-format samples live in ../shared")


@needs_shared
def test_the_real_excerpts_load_as_published():
    sat = load("agieval", path=SHARED / "formats" / "agieval_sat-math_sample.jsonl")
    assert all(it.subject == "sat-math" and it.language == "en" and it.answer_type == "single" for it in sat)
    assert all(not o.startswith("(") for it in sat for o in it.options)
    physics = load("agieval", path=SHARED / "formats" / "agieval_gaokao-physics_sample.jsonl")
    assert {it.answer_type for it in physics} == {"single", "multi"} and {it.language for it in physics} == {"zh"}
    assert all(it.year == 2021 for it in physics)
    multi = [it for it in physics if it.answer_type == "multi"]
    assert all(len(it.answer) >= 2 and it.meta["partial_credit"] is False for it in multi)
