"""measure.scores and measure.exam_rules: accuracy + bootstrap, kappa (UNED), medicina and course-exam rules,
position bias."""
import math

import numpy as np
import pandas as pd
import pytest
from builders import UNED_T5, course_exam_items, records
from scipy import stats as sps

from mcqa_toolkit import measure as M
from mcqa_toolkit.records.columns import records_frame
from mcqa_toolkit.records.factory import make_record, run_fields


def test_accuracy_counts_statuses_separately():
    df = records([
        {"item_id": "a", "choice": 0}, {"item_id": "a", "choice": 0, "shuffle": 1},
        {"item_id": "b", "choice": 0}, {"item_id": "b", "choice": -1, "shuffle": 1},
        {"item_id": "c", "choice": -1, "status": "refused"}, {"item_id": "c", "choice": 2, "shuffle": 1},
    ])
    r = M.accuracy(df, n_boot=200).iloc[0]
    assert r["accuracy"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert (r["n_items"], r["n_records"], r["n_answered"], r["n_unanswered"], r["n_refused"]) == (3, 6, 4, 1, 1)
    assert r["accuracy_answered"] == pytest.approx(3 / 4)
    assert r["ci_low"] <= r["accuracy"] <= r["ci_high"] and r["note"] == ""


def test_accuracy_bootstrap_is_seeded_and_resamples_items():
    rng = np.random.default_rng(1)
    df = records([{"item_id": f"q{i}", "choice": int(rng.integers(0, 2))} for i in range(40)])
    a, b = M.accuracy(df, seed=3), M.accuracy(df, seed=3)
    assert a.equals(b) and not a.equals(M.accuracy(df, seed=4))
    # extra shuffles of the same items must not narrow the CI: items are the resampling unit
    more = pd.concat([df.assign(shuffle=s) for s in range(5)], ignore_index=True)
    c = M.accuracy(more, seed=3)
    assert c[["accuracy", "ci_low", "ci_high"]].equals(a[["accuracy", "ci_low", "ci_high"]])
    assert c["n_records"].iloc[0] == 200


def test_accuracy_groups_annulled_and_degenerate():
    df = records([{"item_id": "a", "choice": 0, "model": "x"}, {"item_id": "b", "choice": 1, "model": "x"},
                  {"item_id": "z", "choice": 1, "answer": -1, "model": "x"},
                  {"item_id": "a", "choice": -1, "model": "y", "status": "refused"}])
    out = M.accuracy(df, by="model", n_boot=50)
    assert list(out["model"]) == ["x", "y"] and out["n_items"].tolist() == [2, 1]  # annulled z dropped
    y = out.iloc[1]
    assert y["accuracy"] == 0 and math.isnan(y["ci_low"]) and "fewer than 2 items" in y["note"]
    assert "no answered records" in y["note"] and math.isnan(y["accuracy_answered"])
    pooled = M.accuracy(df, by=(), n_boot=0).iloc[0]  # one group: item a pools both models' records
    assert (pooled["n_items"], pooled["accuracy"], pooled["note"]) == (2, 0.25, "n_boot=0: no CI")
    with pytest.raises(ValueError, match="lacks column"):
        M.accuracy(df.drop(columns="status"))
    with pytest.raises(ValueError, match="empty"):
        M.accuracy(df.iloc[:0])
    with pytest.raises(ValueError, match="unknown status"):
        M.accuracy(df.assign(status="skipped"))
    with pytest.raises(ValueError, match="disagrees with status"):
        M.accuracy(df.assign(correct=True, status="unanswered"))
    with pytest.raises(ValueError, match="annulled"):
        M.accuracy(df.assign(answer=-1))
    with pytest.raises(ValueError, match="level"):
        M.accuracy(df, level=1.5)


def test_kappa_per_item_options_and_macro_average():
    # subject A: 4 options, 5/8 correct -> (0.625 - .25)/.75 = 0.5
    a = [{"item_id": f"a{i}", "choice": 0 if i < 5 else 1, "subject": "A"} for i in range(8)]
    # subject B: 3 options, 2/3 correct -> (2/3 - 1/3)/(2/3) = 0.5
    b = [{"item_id": f"b{i}", "choice": 0 if i < 2 else 1, "subject": "B", "n_options": 3} for i in range(3)]
    # subject C mixes 3 and 4 options: chance = mean(1/3, 1/4); 1 of 2 correct
    c = [{"item_id": "c0", "choice": 0, "subject": "C", "n_options": 3},
         {"item_id": "c1", "choice": 1, "subject": "C", "n_options": 4}]
    df = records(a + b + c)
    per = M.kappa_by_subject(df).set_index("subject")
    chance_c = (1 / 3 + 1 / 4) / 2
    assert per.loc["A", "kappa"] == pytest.approx(0.5) and per.loc["B", "kappa"] == pytest.approx(0.5)
    assert per.loc["C", "kappa"] == pytest.approx((0.5 - chance_c) / (1 - chance_c))
    k = M.kappa(df, n_boot=300).iloc[0]
    assert k["kappa"] == pytest.approx(per["kappa"].mean()) and k["n_subjects"] == 3 and k["n_items"] == 13
    assert k["ci_low"] <= k["kappa"] <= k["ci_high"]
    one = M.kappa(df, subject=None, n_boot=0).iloc[0]  # all items pooled as one subject
    pooled_chance = np.mean([1 / 4] * 8 + [1 / 3] * 3 + [1 / 3, 1 / 4])
    assert one["kappa"] == pytest.approx((8 / 13 - pooled_chance) / (1 - pooled_chance))
    with pytest.raises(ValueError, match="n_options >= 2"):
        M.kappa(df.assign(n_options=1))


def test_kappa_of_random_answers_is_zero_and_perfect_is_one():
    rows = [{"item_id": f"q{i}", "choice": s, "shuffle": s} for i in range(10) for s in range(4)]
    assert M.kappa(records(rows), n_boot=0)["kappa"].iloc[0] == pytest.approx(0.0)
    assert M.kappa(records([{"item_id": "q", "choice": 0}]), n_boot=0)["kappa"].iloc[0] == pytest.approx(1.0)


UNED_T3 = {("es", "Claude-3-Opus"): 0.81, ("es", "Llama-3-8B-Instruct"): 0.50, ("es", "Leniachat-Gemma-2B"): 0.11,
           ("en", "Claude-3-Opus"): 0.79, ("en", "Llama-3-8B-Instruct"): 0.51, ("en", "Leniachat-Gemma-2B"): 0.15}


def test_macro_average_reproduces_uned_table3_from_table5():
    subj = pd.DataFrame([{"language": lang, "model": m, "subject": f"s{j}", "kappa": v}
                         for (lang, m), vals in UNED_T5.items() for j, v in enumerate(vals)])
    out = M.macro_average(subj, by=["language", "model"]).set_index(["language", "model"])
    assert (out["n_subjects"] == 11).all()
    for key, published in UNED_T3.items():  # mean of 2-decimal subject values vs 2-decimal average
        assert out.loc[key, "kappa"] == pytest.approx(published, abs=0.01)


def test_medicina_worked_example():
    means = {"biologia": 1.0571, "chimica": 0.7598, "competenze-conoscenze": 1.0518, "logica": 0.2005,
             "fisica-matematica": 0.4302}
    score = M.medicina_final(means)
    assert score == pytest.approx(46.51, abs=0.005) and score / 60 == pytest.approx(0.7752, abs=5e-5)
    with pytest.raises(ValueError, match="missing"):
        M.medicina_final({"biologia": 1.0})


def test_medicina_score_from_records():
    subjects = list(M.MEDICINA_WEIGHTS)
    rows = []
    for s in subjects:  # per subject: one correct (+1.5), one wrong (-0.4), one unanswered (0) -> mean 1.1/3
        rows += [{"item_id": f"{s}1", "choice": 0, "subject": s}, {"item_id": f"{s}2", "choice": 1, "subject": s},
                 {"item_id": f"{s}3", "choice": -1, "subject": s}]
    rows.append({"item_id": "biologia4", "choice": -1, "status": "refused", "subject": "biologia"})
    out = M.medicina_score(records(rows, n_options=5)).iloc[0]
    others = 1.1 / 3
    assert out["biologia"] == pytest.approx(1.1 / 4) and out["chimica"] == pytest.approx(others)
    expected = (23 / 60) * 1.1 / 4 + (37 / 60) * others
    assert out["weighted_mean"] == pytest.approx(expected) and out["score"] == pytest.approx(60 * expected)
    assert (out["n_unanswered"], out["n_refused"], out["note"]) == (5, 1, "")
    partial = M.medicina_score(records(rows[:3], n_options=5)).iloc[0]
    assert math.isnan(partial["score"]) and "missing subject" in partial["note"]
    with pytest.raises(ValueError, match="no medicina weight"):
        M.medicina_score(records([{"item_id": "x", "choice": 0, "subject": "storia"}]))


def _exam_records(items, rows):
    """Records of the course-exam items through the record factory: (item_id, shuffle, make_record kwargs)."""
    run = run_fields(model="m", strategy="S1")
    return records_frame([make_record(items[i], run, shuffle=k, **kw) for i, k, kw in rows])


def test_course_exam_scores_and_student_comparison():
    items = course_exam_items()
    rows = [("s", 0, dict(choice=2)), ("s", 1, dict(status="unanswered")), ("m", 0, dict(response=(1, 0))),
            ("t", 0, dict(response=(True, True, False))),
            ("x", 0, dict(response="leader", points_earned=2.5, judgements=[{"judge": "j", "score": 2.5}]))]
    df = _exam_records(items, rows)
    assert df["status"].tolist() == ["correct", "unanswered", "partial", "correct", "partial"]
    assert df["response"].tolist() == ["2", "null", "[0, 1]", "[true, true, false]", '"leader"']
    sc = M.course_exam_scores(df).iloc[0]  # item s: the mean over its shuffles, (5 + 0) / 2
    assert sc["points_earned"] == pytest.approx(2.5 + 2 + 8 + 2.5) and sc["points_possible"] == 23
    assert (sc["n_items"], sc["n_partial"], sc["n_unanswered"], sc["n_error"]) == (4, 2, 1, 0)
    # a judge verdict that could not be read: left out of the points (not 0) and counted on its own
    err = M.course_exam_scores(_exam_records(items, rows[:4] + [("x", 0, dict(response="leader", status="error"))]))
    err = err.iloc[0]
    assert (err["points_earned"], err["points_possible"], err["points_graded"]) == (12.5, 23, 19)
    assert (err["n_error"], err["n_graded"], err["score_pct"]) == (1, 3, pytest.approx(100 * 12.5 / 19))
    # MIT 6.5840 Spring 2024 Exam II metadata from the seed: max 71, avg 56.61, median 57, sd 9.13
    students = pd.DataFrame([{"exam_id": "E1", "score_max": 71.0, "score_avg": 56.61, "score_median": 57,
                              "score_standard_deviation": 9.13}])
    full = sc.to_frame().T.assign(points_earned=60.0, points_possible=71.0, points_graded=71.0)
    cmp = M.compare_to_students(full, students).iloc[0]
    assert cmp["model_score"] == pytest.approx(60) and cmp["z"] == pytest.approx((60 - 56.61) / 9.13)
    assert cmp["percentile"] == pytest.approx(100 * sps.norm.cdf((60 - 56.61) / 9.13)) and cmp["above_median"]
    rescaled = M.compare_to_students(err.to_frame().T, students).iloc[0]  # graded points only, on the exam's scale
    assert rescaled["model_score"] == pytest.approx(12.5 / 19 * 71)
    zero = M.compare_to_students(sc.to_frame().T, students.assign(score_standard_deviation=0)).iloc[0]
    assert math.isnan(zero["z"]) and "sd" in zero["note"]
    with pytest.raises(ValueError, match="no student statistics"):
        M.compare_to_students(sc.to_frame().T.assign(exam="E9"), students)
    with pytest.raises(ValueError, match="lacks column"):
        M.course_exam_scores(df.drop(columns="points_earned"))


def test_position_bias_tvd_and_chi2():
    same = [{"item_id": f"q{i}", "choice": 1, "answer": i % 4, "correct_position": i % 4} for i in range(8)]
    uniform = [{"item_id": f"u{i}", "choice": i % 5, "n_options": 5} for i in range(10)]
    blank = [{"item_id": "z", "choice": -1, "n_options": 3}]
    out = M.position_bias(records(same + uniform + blank)).set_index("n_options")
    assert out.loc[4, "tvd"] == pytest.approx(0.75) == out.loc[4, "tvd_max"]
    assert out.loc[4, "chi2"] == pytest.approx(24.0) and out.loc[4, "dof"] == 3  # (8-2)^2/2 + 3 * 2^2/2
    assert out.loc[4, "p_value"] == pytest.approx(sps.chisquare([0, 8, 0, 0]).pvalue)
    assert out.loc[4, "note"].startswith("expected count < 5")
    assert out.loc[5, "tvd"] == pytest.approx(0) and out.loc[5, "p_value"] == pytest.approx(1)
    assert math.isnan(out.loc[3, "tvd"]) and out.loc[3, "note"] == "no answered records"
    assert out.loc[3, "n_unanswered"] == 1
    dist = M.position_distribution(records(same))
    assert dist["count"].tolist() == [0, 8, 0, 0] and dist["share"].tolist() == [0, 1, 0, 0]
    with pytest.raises(ValueError, match="choice_position"):
        M.position_bias(records([{"item_id": "q", "choice": 0, "choice_position": 7}]))


def test_accuracy_by_correct_position():
    rows = [{"item_id": "a", "choice": 0, "answer": 0}, {"item_id": "b", "choice": 0, "answer": 1},
            {"item_id": "c", "choice": 1, "answer": 1}, {"item_id": "d", "choice": -1, "answer": 1},
            {"item_id": "e", "choice": 0, "answer": -1, "correct_position": -1}]
    out = M.accuracy_by_position(records(rows)).set_index("correct_position")
    assert out["n_records"].to_dict() == {0: 1, 1: 3} and out.loc[1, "accuracy"] == pytest.approx(1 / 3)
    assert out.loc[1, "n_unanswered"] == 1


def test_shuffle_consistency_uses_original_options():
    # item a: original option 2 shown at different positions in 3 shuffles, once option 1, once unanswered
    a = [{"item_id": "a", "shuffle": s, "choice": c, "choice_position": p, "answer": 2}
         for s, (c, p) in enumerate([(2, 0), (2, 3), (2, 1), (1, 1), (-1, -1)])]
    b = [{"item_id": "b", "choice": 0}]
    c = [{"item_id": "c", "shuffle": s, "choice": -1} for s in range(2)]
    d = [{"item_id": "d", "shuffle": s, "choice": s % 2} for s in range(2)]  # tie between options 0 and 1
    out = M.shuffle_consistency(records(a + b + c + d)).set_index("item_id")
    assert out.loc["a", "consistency"] == pytest.approx(3 / 5) and out.loc["a", "modal_choice"] == 2
    assert bool(out.loc["a", "modal_correct"]) and out.loc["a", "n_distinct"] == 2
    assert math.isnan(out.loc["b", "consistency"]) and out.loc["b", "note"].startswith("one shuffle")
    assert math.isnan(out.loc["c", "consistency"]) and out.loc["c", "note"] == "no answered shuffle"
    assert out.loc["d", "modal_choice"] == 0 and out.loc["d", "consistency"] == pytest.approx(0.5)


def test_real_result_frames_after_parquet_round_trip(tmp_path):
    from mcqa_toolkit.records.columns import records_frame

    df = records([{"item_id": f"q{i}", "shuffle": s, "choice": (i + s) % 4, "permutation": [0, 1, 2, 3],
                   "option_probs": [0.25] * 4, "year": 2023, "language": lang}
                  for i in range(6) for s in range(2) for lang in ("en", "es")])
    path = tmp_path / "records.parquet"
    records_frame(df.to_dict("records")).to_parquet(path, index=False)
    real = pd.read_parquet(path)
    assert M.accuracy(real, by=["model", "language", "year"], n_boot=50)["n_items"].tolist() == [6, 6]
    assert len(M.kappa(real)) == 2 and len(M.position_bias(real)) == 2
    assert len(M.shuffle_consistency(real)) == 12 and len(M.accuracy_by_position(real)) == 2  # key always shown first


def test_position_bias_with_no_grouping():
    """by=() (one overall group) must work for every position function (regression)."""
    from mcqa_toolkit.measure import accuracy_by_position, position_bias, position_distribution

    correct = [True, False, False, False, False, True, True, False]
    f = pd.DataFrame({"n_options": [4] * 8, "choice_position": [0, 0, 0, 0, 1, 2, 3, 0],
                      "status": ["correct" if c else "incorrect" for c in correct],
                      "correct_position": [0, 1, 2, 3] * 2, "correct": correct})
    pb = position_bias(f, by=())
    assert pb.loc[0, "n_answered"] == 8 and pb.loc[0, "tvd"] == pytest.approx(0.5 * (0.375 + 3 * 0.125))
    assert len(position_distribution(f, by=())) == 4 and len(accuracy_by_position(f, by=())) == 4
