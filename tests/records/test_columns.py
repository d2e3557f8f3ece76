"""records.columns: frames conformed to the column contract (schema columns first, a missing one named), one record
per (item, shuffle) with the dropped duplicates logged, and records of the single-answer schema upgraded (status
answered -> correct / incorrect, one point per keyed item, the response from the choice)."""
from __future__ import annotations

import logging

import pandas as pd
import pytest

from mcqa_toolkit.items import Item
from mcqa_toolkit.records.columns import COLUMNS, KEY, conform, records_frame, unique_records, upgrade_legacy
from mcqa_toolkit.records.factory import make_record, run_fields


def _record(item_id: str, shuffle: int = 0, choice: int = 0, answer: int | None = 1) -> dict:
    item = Item(item_id=item_id, source="t", exam="e", stem="?", options=("a", "b", "c"), answer=answer)
    return make_record(item, run_fields(model="m"), shuffle=shuffle, choice=choice)


def test_frames_have_the_schema_columns_first_and_a_missing_one_is_named():
    empty = records_frame([])
    assert empty.empty and list(empty.columns) == list(COLUMNS) + ["extra"]
    df = records_frame([{**_record("q1"), "note": "kept"}])
    assert list(df.columns) == list(COLUMNS) + ["extra", "note"]
    shuffled = df[list(reversed(df.columns))]
    assert list(conform(shuffled).columns) == list(COLUMNS) + ["note", "extra"]  # the others keep their order
    with pytest.raises(ValueError, match=r"records lack column\(s\) \['option_probs', 'seconds'\]"):
        conform(df.drop(columns=["seconds", "option_probs"]))


def test_one_record_per_item_and_shuffle_the_first_written_kept(caplog):
    df = records_frame([_record("q1", choice=2), _record("q1", 1), _record("q1", choice=0), _record("q2")])
    with caplog.at_level(logging.WARNING, logger="mcqa_toolkit.records"):
        kept = unique_records(df, "outputs/r/records.jsonl")
    assert kept[KEY].values.tolist() == [["q1", 0], ["q1", 1], ["q2", 0]] and kept["choice"].tolist() == [2, 0, 0]
    assert "outputs/r/records.jsonl: 1 duplicate record(s) of an (item, shuffle) dropped" in caplog.text
    caplog.clear()
    assert unique_records(kept) is kept and not caplog.text  # nothing to drop: the same frame, nothing logged


def test_records_of_the_single_answer_schema_are_upgraded():
    new = [_record("right", choice=1), _record("wrong", choice=0), _record("blank", choice=-1),
           _record("annulled", choice=2, answer=None)]
    legacy = pd.DataFrame(new).drop(columns=["points_earned", "points_possible", "judgements", "response",
                                             "answer_type"])
    legacy["status"] = ["answered", "answered", "unanswered", "answered"]
    legacy["correct"] = [True, False, False, False]
    up = conform(legacy).set_index("item_id")
    assert up["status"].to_dict() == {"right": "correct", "wrong": "incorrect", "blank": "unanswered",
                                      "annulled": "incorrect"}
    assert up["response"].to_dict() == {"right": "1", "wrong": "0", "blank": "null", "annulled": "2"}
    assert up["points_earned"].tolist() == [1.0, 0.0, 0.0, 0.0] and up["points_possible"].tolist() == [1, 1, 1, 0]
    assert set(up["answer_type"]) == {"single"} and set(up["judgements"]) == {""}
    current = records_frame(new)
    assert upgrade_legacy(current) is current  # frames in the schema pass unchanged


def test_records_without_status_name_the_missing_columns():
    """Records lacking both points and status are not mistaken for the legacy schema: the error names them."""
    with pytest.raises(ValueError, match=r"records lack column\(s\) \[.*'status'"):
        records_frame([{"item_id": "q1", "shuffle": 0}])
