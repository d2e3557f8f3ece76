"""records.factory: make_record for every question type (responses normalised, points and status graded by the exam
rule, what a rule cannot see given from outside, inconsistent arguments refused)."""
from __future__ import annotations

import pytest

from mcqa_toolkit.items import Item
from mcqa_toolkit.records.factory import make_record, run_fields


def test_record_factory_per_type():
    run_info = run_fields(model="m")
    short = Item(item_id="x", source="t", exam="E", stem="?", options=(), answer="ref", answer_type="short", points=4)
    multi = Item(item_id="m", source="t", exam="E", stem="?", options=tuple("abcd"), answer=(0, 2), answer_type="multi",
                 points=6)
    assert make_record(multi, run_info, response=[2, 0, 2])["response"] == "[0, 2]"
    assert make_record(multi, run_info, response=None)["status"] == "unanswered"
    assert make_record(short, run_info, response="r", status="refused")["points_earned"] == 0
    with pytest.raises(ValueError, match="judge's points_earned"):
        make_record(short, run_info, response="an answer")
    with pytest.raises(ValueError, match="judge returned 5"):
        make_record(short, run_info, response="an answer", points_earned=5)
    with pytest.raises(ValueError, match="derived"):
        make_record(multi, run_info, response=[0], points_earned=6)
    with pytest.raises(ValueError, match="pass its response"):
        make_record(multi, run_info)
    with pytest.raises(ValueError, match="collection of option indices"):
        make_record(multi, run_info, response="A,C")
    with pytest.raises(ValueError, match="derived from the response"):
        make_record(multi, run_info, response=[0], status="correct")
