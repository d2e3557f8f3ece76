"""records.grading: the exam rule that grades one response (single and true/false exact, multi partial credit
capped at the item's points, letters read as options, short answers by a judge whose verdict is checked)."""
import pytest
from builders import course_exam_items

from mcqa_toolkit.items import Item
from mcqa_toolkit.records.columns import STATUSES
from mcqa_toolkit.records.grading import RULE_STATUSES, course_exam_points


def test_course_exam_points_rules():
    items = course_exam_items()
    s, m, t, x = (items[i] for i in "smtx")
    assert course_exam_points(s, 2) == (5.0, "correct") and course_exam_points(s, 0) == (0.0, "incorrect")
    assert course_exam_points(m, (2, 1, 0)) == (6.0, "correct")
    assert course_exam_points(m, (0, 1)) == (2.0, "partial")
    assert course_exam_points(m, (0, 3)) == (0.0, "incorrect")  # not a subset
    assert course_exam_points(m, ()) == (0.0, "unanswered") and course_exam_points(s, -1)[1] == "unanswered"
    assert course_exam_points(t, (True, True, False))[0] == 8 and course_exam_points(t, (True, True, True))[0] == 0
    assert course_exam_points(x, "a leader", judge=lambda it, r: 3)[0] == 3.0
    assert course_exam_points(m.with_(points=1), (0,)) == (1.0, "partial")  # 2-point credit capped at points
    assert course_exam_points(m, "A, B") == (2.0, "partial") and course_exam_points(s, "c")[1] == "correct"
    # the loader keeps unparsable choice questions as "short" with a letter key: scored by letters, no judge
    raw = x.with_(answer="A,B,D", meta={"options_parsed": False, "question_type": "MultipleChoice"})
    assert course_exam_points(raw, "A,B,D")[1] == "correct" and course_exam_points(raw, "D")[0] == 2.0
    with pytest.raises(ValueError, match="option letters"):
        course_exam_points(raw, "maybe B")
    with pytest.raises(ValueError, match="judge"):
        course_exam_points(x, "text")
    for bad in (5, -1, "3", True, float("nan")):
        with pytest.raises(ValueError, match="judge returned"):
            course_exam_points(x, "text", judge=lambda it, r, bad=bad: bad)


def test_multi_answer_items_without_partial_credit_need_the_exact_set():
    """AGIEval scores select-all questions by exact set match: its items say meta partial_credit False."""
    m = course_exam_items()["m"]
    exact = m.with_(meta={**m.meta, "partial_credit": False})
    assert course_exam_points(exact, (0, 1)) == (0.0, "incorrect") and course_exam_points(m, (0, 1))[1] == "partial"
    assert course_exam_points(exact, tuple(exact.answer)) == (m.points, "correct")
    assert course_exam_points(exact, ()) == (0.0, "unanswered")
    for response in [(0,), (1, 2), (0, 1, 2, 3), tuple(exact.answer)]:    # the naive rule: the set, or nothing
        assert course_exam_points(exact, response)[0] == (m.points if set(response) == set(exact.answer) else 0.0)


def test_rule_statuses_are_record_statuses():
    assert set(RULE_STATUSES) <= set(STATUSES) and {"refused", "error"} == set(STATUSES) - set(RULE_STATUSES)


def test_an_annulled_item_cannot_be_graded():
    item = Item(item_id="z", source="t", exam="E", stem="?", options=("a", "b"), answer=None)
    with pytest.raises(ValueError, match="annulled"):
        course_exam_points(item, 0)


def test_a_true_false_item_needs_a_tuple_key():
    item = Item(item_id="tf", source="t", exam="E", stem="?", options=("True", "False"), answer=1,
                answer_type="truefalse")
    with pytest.raises(ValueError, match="tuple of bools"):
        course_exam_points(item, (True,))
