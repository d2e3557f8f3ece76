"""The LLM judge and its measurement: strict verdict parsing (anything but a number in range is an error with the
raw text kept, never 0), combining judges, agreement statistics against independent references (sklearn's
quadratic-weighted kappa, Shrout & Fleiss's published ICC example), and human grades."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score  # the independent reference (test extra)

from mcqa_toolkit import measure
from mcqa_toolkit.backends import Capabilities, CapabilityError, Generation
from mcqa_toolkit.datasets.grades import read_human_grades
from mcqa_toolkit.items import DatasetError, Item
from mcqa_toolkit.records.columns import records_frame
from mcqa_toolkit.records.factory import make_record, run_fields
from mcqa_toolkit.scoring.judge import Judgement, LLMJudge, combine_scores, judge_answers, parse_verdict


class ScriptedJudge:
    """A generation-only backend that replies with the next text of `replies` (cycled) and counts its calls."""

    def __init__(self, replies, name="scripted-judge"):
        self.name, self.replies, self.calls, self.prompts = name, list(replies), 0, []
        self.capabilities = Capabilities(generate=True)

    def provenance(self):
        return {"source": self.name}

    def usage(self):
        return {"forwarded_tokens": 0}

    def generate(self, prompts, *, max_new_tokens, temperature=0.0, stop=(), seeds=None):
        self.calls += 1
        out = []
        for p in prompts:
            self.prompts.append(p.text)
            out.append(Generation(self.replies[(len(self.prompts) - 1) % len(self.replies)], 10, 5, "stop"))
        return out


ITEM = Item(item_id="q", source="t", exam="E", stem="Why is the sky blue?", options=(), answer="Rayleigh scattering.",
            answer_type="short", points=4, meta={"explanation": "Short wavelengths scatter more."})

VERDICTS = [  # judge output (after the '{"score":' prefill) -> score or None, rule / reason fragment
    (' 3, "justification": "Mentions scattering but not wavelength."}', 3.0, "json"),
    (' 4}', 4.0, "json"),
    (' 0, "justification": "Wrong."}\n\nQuestion: next one', 0.0, "json"),
    (' 2.5, "justification": "Partly right, and then the text was cut off by max tok', 2.5, "json_truncated"),
    (' 5, "justification": "Excellent."}', None, "outside [0, 4]"),
    (' -1}', None, "outside [0, 4]"),
    (' "three", "justification": "x"}', None, "not a number"),
    (' true}', None, "not a number"),
    (' NaN}', None, "not a number"),
    (' about three points', None, "no JSON object"),
    ('', None, "no JSON object"),
]


@pytest.mark.parametrize("reply,score,why", VERDICTS)
def test_parse_verdict_is_strict(reply, score, why):
    got, justification, rule, reason = parse_verdict('{"score":' + reply, 4.0)
    assert got == score
    if score is None:
        assert why in reason
    else:
        assert rule == why and reason == ""


def test_a_fenced_reply_without_the_prefill_is_read_too():
    got = parse_verdict('{"score":```json\n{"score": 1, "justification": "j"}\n```', 4.0)
    assert got == (1.0, "j", "json", "")


def test_judge_keeps_raw_output_and_marks_errors():
    backend = ScriptedJudge([' 3, "justification": "ok"}', " I would give it 3 points"])
    judge = LLMJudge(backend, name="j1")
    good, bad = judge.judge([ITEM, ITEM], ["Scattering.", "Because."])
    assert (good.score, good.status, good.justification, good.rule) == (3.0, "ok", "ok", "json")
    assert (bad.score, bad.status, bad.raw_output) == (None, "error", " I would give it 3 points")
    assert "no JSON object" in bad.reason and bad.judge == "j1" and len(good.prompt_hash) == 12
    prompt = backend.prompts[0]
    for part in ("Why is the sky blue?", "Rayleigh scattering.", "Short wavelengths scatter more.", "Scattering.",
                 "Points available: 4", "accuracy", "completeness", "logical consistency", "clarity"):
        assert part in prompt
    assert prompt.endswith('JSON: {"score":') and judge.identity()["judge"] == "j1"


def test_judge_needs_a_backend_that_generates():
    class NoGen(ScriptedJudge):
        def __init__(self):
            super().__init__([""])
            self.capabilities = Capabilities(next_token_logprobs=True)

    with pytest.raises(CapabilityError, match="cannot judge"):
        LLMJudge(NoGen())


def _j(score, status="ok"):
    return Judgement("j", "h", "raw", score, "", status)


def test_combine_scores():
    assert combine_scores([_j(1.0), _j(2.0), _j(None, "error")]) == 1.5  # the error is left out, not a 0
    assert combine_scores([_j(1.0), _j(3.0), _j(3.0)], "majority") == 3.0
    assert combine_scores([_j(1.0), _j(3.0)], "majority") == 1.0          # a tie goes to the lower score
    assert combine_scores([_j(None, "error")]) is None
    with pytest.raises(ValueError, match="combine rule"):
        combine_scores([_j(1.0)], "median")
    a, b = LLMJudge(ScriptedJudge([" 2}"], "a")), LLMJudge(ScriptedJudge([" 4}"], "b"))
    (points, verdicts), = judge_answers([a, b], [ITEM], ["x"])
    assert points == 3.0 and [v["judge"] for v in verdicts] == ["a", "b"]


def test_quadratic_weighted_kappa_hand_computed_and_against_sklearn():
    # hand computed: ratings (0,0), (1,1), (2,1): O = [[1,0,0],[0,1,0],[0,1,0]], rows (1,1,1), cols (1,2,0),
    # W = [[0,.25,1],[.25,0,.25],[1,.25,0]]; sum(W O) = W[2,1] = .25; E[i,j] = row_i col_j / 3 = (1/3, 2/3, 0) per
    # row, sum(W E) = 1/6 + 1/12 + 1/2 = 3/4; kappa = 1 - .25 / .75 = 2/3
    assert measure.quadratic_weighted_kappa([0, 1, 2], [0, 1, 1]) == pytest.approx(2 / 3)
    assert math.isnan(measure.quadratic_weighted_kappa([2, 2], [2, 2]))  # one category only: nothing to agree on
    assert measure.quadratic_weighted_kappa([0.5, 1.4, 2.6], [1, 1, 3]) == 1.0  # whole points, halves up
    rng = np.random.default_rng(3)
    a = rng.integers(0, 8, 200)
    b = np.clip(a + rng.integers(-3, 4, 200), 0, 7)
    want = cohen_kappa_score(a, b, weights="quadratic", labels=list(range(8)))
    assert measure.quadratic_weighted_kappa(a, b) == pytest.approx(want, abs=1e-12)


def test_icc_reproduces_shrout_and_fleiss():
    # Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges; ICC(2,1) = 0.29
    ratings = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])
    assert measure.icc(ratings) == pytest.approx(0.29, abs=0.005)
    assert measure.icc(np.c_[np.arange(5.0), np.arange(5.0)]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="matrix"):
        measure.icc(np.array([[1.0, np.nan], [2.0, 3.0]]))


def _judged_records(scores_a, scores_b, points=4.0):
    """Short-answer records judged by two judges (None = an unreadable verdict), combined by mean."""
    out = []
    for k, (a, b) in enumerate(zip(scores_a, scores_b, strict=True)):
        item = ITEM.with_(item_id=f"q{k}", points=points)
        verdicts = [Judgement(n, "h", "raw", s, "", "ok" if s is not None else "error").as_dict()
                    for n, s in (("ja", a), ("jb", b))]
        combined = combine_scores([Judgement(**v) for v in verdicts])
        out.append(make_record(item, run_fields(run_id="r", model="m", strategy="S"), response="an answer",
                               points_earned=combined, status=None if combined is not None else "error",
                               judgements=verdicts))
    return records_frame(out)


def test_judge_agreement_and_frame():
    df = _judged_records([4, 3, 0, 2, None], [4, 2, 1, 2, None])
    assert df["status"].tolist() == ["correct", "partial", "partial", "partial", "error"]
    assert math.isnan(df["points_earned"].iloc[4])           # an error is never 0 points
    verdicts = measure.judgements_frame(df)
    assert len(verdicts) == 10 and (verdicts["status"] == "error").sum() == 2
    agree = measure.judge_agreement(df).iloc[0]
    assert (agree["rater_a"], agree["rater_b"], agree["n"], agree["n_unreadable"]) == ("ja", "jb", 4, 1)
    assert agree["qwk"] == pytest.approx(measure.quadratic_weighted_kappa([4, 3, 0, 2], [4, 2, 1, 2]))
    assert agree["icc"] == pytest.approx(measure.icc(np.array([[4, 4], [3, 2], [0, 1], [2, 2]]) / 4))
    assert agree["mean_abs_diff"] == pytest.approx(0.5)
    assert measure.judge_agreement(_judged_records([1], [None])).empty is False


def test_human_grades_override_and_compare(tmp_path):
    df = _judged_records([4, 3, 0, None], [4, 2, 1, None])
    grades = pd.DataFrame({"item_id": ["q1", "q3"], "points": [4.0, 1.0]})
    out = measure.apply_human_grades(df, grades)
    assert out.loc[1, ["points_earned", "status", "graded_by"]].tolist() == [4.0, "correct", "human"]
    assert out.loc[3, ["points_earned", "status", "graded_by"]].tolist() == [1.0, "partial", "human"]
    assert out.loc[0, "graded_by"] == "judge" and df.loc[1, "points_earned"] == 2.5  # the input is not changed
    cmp = measure.compare_with_human(df, pd.DataFrame({"item_id": ["q0", "q1", "q2"], "points": [4, 2, 0]}))
    assert cmp["rater_a"].tolist() == ["ja", "jb", "combined"] and (cmp["rater_b"] == "human").all()
    assert cmp.set_index("rater_a").loc["ja", "mean_abs_diff"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="match no record"):
        measure.apply_human_grades(df, pd.DataFrame({"item_id": ["nope"], "points": [1]}))
    with pytest.raises(ValueError, match=r"not a number in \[0, points\]"):
        measure.apply_human_grades(df, pd.DataFrame({"item_id": ["q0"], "points": [9]}))
    csv = tmp_path / "grades.csv"
    csv.write_text("item_id,points,grader\nq0,3.5,ana\nq2,0,ana\n")
    assert read_human_grades(csv)[["item_id", "points"]].values.tolist() == [["q0", 3.5], ["q2", 0.0]]
    csv.write_text("item_id,points\nq0,lots\n")
    with pytest.raises(DatasetError, match="'points': not a number"):
        read_human_grades(csv)
    csv.write_text("item_id,points\nq0,1\nq0,2\n")
    with pytest.raises(DatasetError, match="second grade"):
        read_human_grades(csv)
