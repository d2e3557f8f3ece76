"""A course exam end to end through run() with scripted backends (no model): every question of every type yields
a record, partial credit, unreadable true/false lists and judge verdicts, the yes/no path of log-prob strategies,
resuming a killed run without re-judging, the checks made before any request, and the report's table, figure
and comparison.json."""
from __future__ import annotations

import hashlib
import json
import math
import re

import pandas as pd
import pytest
from scripted_backends import ScriptedJudge, ScriptedModel

import mcqa_toolkit.run.runner as runner_mod
from mcqa_toolkit import measure
from mcqa_toolkit.backends import Capabilities, CapabilityError
from mcqa_toolkit.datasets import load
from mcqa_toolkit.report import plots, tables
from mcqa_toolkit.report.course_exam import comparison_json, load_course_exam_runs
from mcqa_toolkit.run import Strategy, run
from mcqa_toolkit.scoring.judge import LLMJudge


@pytest.fixture(scope="module")
def items():
    return load("course_exam")  # the shipped demo course exam (data/demo/course_exam)


GENERATE = Strategy.generate(shuffles=2, max_new_tokens=40)


def _run(items, tmp_path, st=GENERATE, judge=None, model=None, name="r"):
    judge = judge or ScriptedJudge()
    return run(items, model or ScriptedModel(), st, tmp_path / name, dataset="course_exam",
               judges=[LLMJudge(judge)], progress=False)


def test_every_question_of_every_type_yields_a_graded_record(items, tmp_path):
    df = _run(items, tmp_path).set_index(["item_id", "shuffle"])
    assert df.index.get_level_values(0).nunique() == len(items) == 10
    per_item = df.groupby(level=0).size()
    assert per_item.to_dict() == {f"course-{i}": 2 if i in (101, 102, 106, 107) else 1 for i in range(101, 111)}
    first = df.xs(0, level="shuffle")
    assert first["status"].to_dict() == {
        "course-101": "correct", "course-102": "partial", "course-103": "correct", "course-104": "partial",
        "course-105": "correct", "course-106": "incorrect", "course-107": "correct", "course-108": "unanswered",
        "course-109": "error", "course-110": "incorrect"}
    assert first.loc["course-102", ["points_earned", "points_possible"]].tolist() == [2.0, 8.0]
    assert first.loc["course-102", "response"] == "[0, 2]"
    assert first.loc["course-103", "response"] == "[true, false, true]"
    assert first.loc["course-104", "points_earned"] == 3.0
    assert json.loads(first.loc["course-104", "response"]).startswith("The")
    assert first.loc["course-105", "response"] == "[0]" and first.loc["course-110", "points_earned"] == 0
    assert first.loc["course-107", "extraction_rule"] == "json:bare_letters"
    assert json.loads(first.loc["course-107", "extra"])["explanation"] == "both agree"
    assert "3 True/False values for 4 statements" in json.loads(first.loc["course-108", "extra"])["reason"]
    # the judge's unreadable verdict: status error, no points (not 0), the raw output kept in the record
    err = first.loc["course-109"]
    verdict = json.loads(err["judgements"])[0]
    assert math.isnan(err["points_earned"]) and verdict["raw_output"] == " I'd say 5/7" and verdict["status"] == "error"
    assert verdict["judge"] == "judge" and len(verdict["prompt_hash"]) == 12
    # shuffles map letters back to original options: "B" in a shuffled order is another option
    assert (df.loc["course-101", "choice"] == [df.loc[("course-101", k), "permutation"][1] for k in (0, 1)]).all()
    assert (df["correct"] == (df["status"] == "correct")).all() and set(df["judgements"].loc[["course-101"]]) == {""}
    sc = measure.course_exam_scores(df.reset_index(), overall=True).set_index("exam")
    assert sc.loc["overall", "n_error"] == 1 and sc.loc["db_systems_spring_2024_final", "n_graded"] == 4
    assert sc.loc["overall", "points_possible"] == 64 and sc.loc["overall", "points_graded"] == 57


def test_yes_no_path_of_log_prob_strategies(items, tmp_path):
    keys = {it.item_id: it for it in items}

    def p_yes(item_id, text):  # the key's options and true statements get P(yes) > 0.5
        it = keys[item_id]
        if it.answer_type == "multi":
            letter = re.search(r"Is option ([A-J]) correct", text).group(1)
            shown = re.search(rf"\n{letter}\. (.*)\n", text).group(1)
            return 0.8 if it.options.index(shown) in it.answer else 0.3
        if it.answer_type == "truefalse":
            return 0.9 if it.answer[int(re.search(r"Is statement (\d+)", text).group(1)) - 1] else 0.2
        return 0.5

    for st in (Strategy.first_token(shuffles=2), Strategy.loglik("sum")):
        df = _run(items, tmp_path, st, model=ScriptedModel(p_yes), name=st.method).set_index("item_id")
        assert df.loc[["course-102", "course-107", "course-103", "course-108"], "status"].eq("correct").all()
        multi = df.loc[["course-102"]].iloc[-1]
        assert multi["extraction_rule"] == "yes_no_p>=0.5" and multi["option_scores"] == pytest.approx([.8, .3, .8, .8])
        assert json.loads(df.loc["course-108", "extra"])["p_true"] == pytest.approx([.9, .2, .9, .9])
        # short answers and inline choice questions are still generated
        assert df.loc["course-104", "status"] == "partial" and df.loc["course-105", "status"] == "correct"


def test_killed_run_resumes_without_rejudging(items, tmp_path, killed_at_call):
    st = Strategy.generate(max_new_tokens=20, block_size=3)
    full = _run(items, tmp_path, st, name="full")
    judge = ScriptedJudge()
    with killed_at_call(runner_mod, "ask", 3):
        _run(items, tmp_path, st, judge=judge, name="killed")
    judged_before = list(judge.generated)
    resumed = _run(items, tmp_path, st, judge=judge, name="killed")
    volatile = ["seconds", "n_forwarded_tokens", "run_id"]
    pd.testing.assert_frame_equal(resumed.drop(columns=volatile), full.drop(columns=volatile))
    assert judged_before and sorted(judge.generated) == ["course-104", "course-109"]  # each judged exactly once


def test_checks_before_any_request(items, tmp_path):
    lp_only = ScriptedModel(capabilities=Capabilities(next_token_logprobs=True, continuation_logprobs=True))
    with pytest.raises(CapabilityError, match="cannot generate text, which 4 item"):
        run(items, lp_only, Strategy.first_token(), tmp_path / "a", judges=[LLMJudge(ScriptedJudge())],
            progress=False)
    with pytest.raises(ValueError, match="need a judge"):
        run(items, ScriptedModel(), Strategy.generate(), tmp_path / "b", progress=False)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    _run(items.filter(item_id="course-104"), tmp_path, name="c")
    other = ScriptedJudge()
    other.name = "another-judge"
    with pytest.raises(ValueError, match="holds a different run, made with judges"):
        _run(items.filter(item_id="course-104"), tmp_path, judge=other, name="c")
    with pytest.raises(ValueError, match="needs method='generate'"):
        Strategy.first_token(structured=True)


def test_structured_strategy_asks_for_json_and_keeps_old_hashes(items, tmp_path):
    model = ScriptedModel()
    prompts = []
    real = model.generate

    def spy(ps, **kw):
        prompts.extend(ps)
        return real(ps, **kw)

    model.generate = spy
    df = _run(items, tmp_path, Strategy.generate(structured=True), model=model)
    assert all('{"answer":' in p.text and p.text.endswith("JSON:") for p in prompts) and len(prompts) == 10
    assert df.set_index("item_id").loc["course-101", "status"] == "correct"  # single choice asked the JSON way
    plain = Strategy.generate()  # a field added later leaves the hashes of earlier strategies unchanged
    fields = {k: v for k, v in plain.to_dict().items() if k not in ("name", "block_size", "structured", "adaptive")}
    assert plain.hash == hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]
    assert Strategy.generate(structured=True).hash != plain.hash


def test_report_table_figure_and_comparison(items, tmp_path):
    _run(items, tmp_path, name="a")
    _run(items, tmp_path, Strategy.generate(name="other", shuffles=1, max_new_tokens=40), name="b")
    runs = load_course_exam_runs(tmp_path)   # the items the runs were given, from their folders
    assert load_course_exam_runs(tmp_path / "a" / "nothing_here") is None
    cmp = runs.comparison()
    assert len(cmp) == 4 and set(cmp["exam_name"]) == {"Computer Networks: Fall 2023 Midterm",
                                                        "Database Systems: Spring 2024 Final"}
    row = cmp[(cmp["strategy"] == "other") & (cmp["exam"] == "db_systems_spring_2024_final")].iloc[0]
    # db exam: 106 incorrect, 107 correct (6), 108 unanswered, 109 error (left out), 110 incorrect: 6 of 24 graded
    assert (row["points_earned"], row["points_graded"]) == (6.0, 24.0)
    assert row["model_score"] == pytest.approx(6 / 24 * 30) and row["z"] == pytest.approx((7.5 - 19.75) / 4.5)
    tex = tables.exam_score_table(cmp, caption="c", label="tab:c").to_latex()
    assert "Database Systems: Spring 2024 Final" in tex and r"\textbf{7.5}" in tex
    fig = plots.student_comparison(cmp)
    assert len([a for a in fig.axes if a.get_visible()]) == 2
    data = comparison_json(cmp, runs.scores(overall=True))
    entry = data["scripted / other"]["exams"]["db_systems_spring_2024_final"]
    assert (entry["llm_score"], entry["student_avg"], entry["n_error"]) == (7.5, 19.75, 1)
    assert data["scripted / other"]["overall"]["n_error"] == 1


def test_inspector_shows_responses_of_every_type(items, tmp_path):
    from mcqa_toolkit.report.inspector import responses_frame, responses_html

    df = _run(items, tmp_path, Strategy.generate(max_new_tokens=20))
    shown = {i: responses_frame(df[df["item_id"] == i], items[i]).iloc[0] for i in ("course-102", "course-103",
                                                                                    "course-104", "course-108")}
    assert shown["course-102"]["response"] == "A,C" and shown["course-102"]["points_earned"] == 2.0
    assert shown["course-103"]["response"] == "T F T" and shown["course-103"]["status"] == "correct"
    assert shown["course-104"]["response"].startswith("The handshake")
    assert shown["course-108"]["response"] == "" and shown["course-108"]["status"] == "unanswered"
    html = responses_html(responses_frame(df[df["item_id"] == "course-102"], items["course-102"]))
    assert "A,C (2/8, partial)" in html
