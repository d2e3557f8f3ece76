"""records.store (RunDir): a partial last line of records.jsonl (a killed append) is dropped and cut off, a damaged
line anywhere else is an error naming the file and the line (never skipped), and finalising compacts the records to
Parquet sorted by item and shuffle, one per key, with provenance marked complete."""
from __future__ import annotations

import logging
import re

import pandas as pd
import pytest

from mcqa_toolkit.items import Item
from mcqa_toolkit.records.factory import make_record, run_fields
from mcqa_toolkit.records.store import RunDir


def _record(item_id: str, shuffle: int = 0, choice: int = 0) -> dict:
    item = Item(item_id=item_id, source="t", exam="e", stem="?", options=("a", "b", "c"), answer=1)
    return make_record(item, run_fields(model="m"), shuffle=shuffle, choice=choice)


def test_a_partial_last_line_is_dropped_and_cut_off(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.append([_record("q1"), _record("q2")])
    whole = rd.jsonl.read_bytes()
    with open(rd.jsonl, "ab") as f:
        f.write(b'{"item_id": "q3", "shu')  # the append a kill interrupted
    assert [r["item_id"] for r in rd.read_records()] == ["q1", "q2"] and rd.done_keys() == {("q1", 0), ("q2", 0)}
    assert rd.jsonl.read_bytes() == whole  # cut off, so that the next append starts a line of its own
    rd.append([_record("q3")])
    assert [r["item_id"] for r in rd.read_records()] == ["q1", "q2", "q3"]


def test_a_damaged_line_is_an_error_naming_the_file_and_the_line(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.append([_record("q1")])
    good = rd.jsonl.read_bytes()
    for line, why in ((b'{"item_id": "q2", "shuf\n', "is corrupt"), (b"\xff\xfe\n", "is corrupt"),
                      (b'{"item_id": "q2"}\n', "is not a record (no item_id and shuffle)"),
                      (b'{"item_id": "q2", "shuffle": true}\n', "is not a record"), (b"[1, 2]\n", "is not a record")):
        rd.jsonl.write_bytes(good + line + good)  # complete lines: damaged outside our writes, not by a kill
        with pytest.raises(ValueError, match=f"^{re.escape(str(rd.jsonl))}: line 2 {re.escape(why)}"):
            rd.read_records()
        assert rd.jsonl.read_bytes() == good + line + good  # nothing dropped


def test_finalize_sorts_keeps_one_record_per_key_and_marks_the_records_compacted(tmp_path, caplog):
    rd = RunDir(tmp_path / "run")
    rd.write_run_info({"strategy_hash": "h"})
    rd.append([_record("q2", 0), _record("q1", 1, choice=2)])
    rd.append([_record("q1", 0), _record("q1", 1, choice=0)])  # a second writer (before the lock) wrote q1#1 again
    assert not rd.is_complete()
    with caplog.at_level(logging.WARNING, logger="mcqa_toolkit.records"):
        df = rd.finalize({"strategy_hash": "h"})
    assert df[["item_id", "shuffle"]].values.tolist() == [["q1", 0], ["q1", 1], ["q2", 0]]
    assert df["choice"].tolist() == [0, 2, 0]  # the first written q1#1 is kept
    assert "1 duplicate record(s)" in caplog.text
    assert rd.provenance() == {"strategy_hash": "h", "complete": True, "n_records": 3} and rd.is_compacted()
    assert not rd.is_complete()   # complete once summary.json follows (records.state.OpenRun.complete)
    pd.testing.assert_frame_equal(rd.load(), df)  # read back from Parquet
    assert len(rd.read_records()) == 4  # records.jsonl itself is left as written


def test_items_are_written_once_and_rewritten_only_when_they_change(tmp_path):
    """A resumed run gives write_items the same items: the file is left as it is (same inode, same bytes), so a run
    resumed on a nearly full disk writes records only (tests/faults/test_full_disk.py); other items replace it."""
    items = [Item(f"q{i}", "ours", "exam", f"Stem {i}", ("a", "b"), 0, language="pt", subject="s") for i in range(3)]
    rd = RunDir(tmp_path / "run")
    first = rd.write_items(items)
    inode, text = first.stat().st_ino, first.read_text(encoding="utf-8")
    assert rd.write_items(items).stat().st_ino == inode and first.read_text(encoding="utf-8") == text
    rd.write_items(items[:2])
    assert [d["item_id"] for d in rd.read_items()] == ["q0", "q1"]
