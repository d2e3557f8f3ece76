"""records.files: an atomic write leaves the old file or the new one, never half of one nor its temporary file,
and a failed one is RunWriteError naming the file and what is intact; JSON side files read back, a damaged one
named."""
from __future__ import annotations

import errno
import re
from pathlib import Path

import numpy as np
import pytest

from mcqa_toolkit.records.files import RunWriteError, atomic, read_json, write_json


def _full_disk(tmp: Path) -> None:
    tmp.write_text("the first half of the new")
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_atomic_write_leaves_the_old_file_and_no_partial_one(tmp_path):
    path = tmp_path / "records.parquet"
    path.write_text("old")
    with pytest.raises(RunWriteError) as failed:
        atomic(path, _full_disk, "the records as Parquet", "records.jsonl is intact")
    assert str(failed.value) == (f"{path}: could not write the records as Parquet (No space left on device); "
                                 "records.jsonl is intact")
    assert isinstance(failed.value, OSError) and failed.value.errno == errno.ENOSPC
    assert failed.value.filename == str(path)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["records.parquet"]
    atomic(path, lambda tmp: tmp.write_text("new"), "x", "y")
    assert path.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["records.parquet"]


def test_a_failed_rename_is_a_run_write_error_too(tmp_path):
    folder = tmp_path / "summary.json"
    folder.mkdir()  # renaming a file over a folder fails after the temporary file was written
    with pytest.raises(RunWriteError, match=r"summary.json: could not write summary.json \(.*\); the records are "
                                            "intact"):
        write_json(folder, {"accuracy": 1.0})
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"] and folder.is_dir()


def test_json_side_files_round_trip_and_a_damaged_one_is_named(tmp_path):
    path = tmp_path / "run.json"
    assert read_json(path) == {}  # absent
    write_json(path, {"n": np.int64(3), "p": np.float32(0.5), "a": np.arange(2), "s": {7}, "t": (1, 2),
                      "path": Path("x/y"), "text": "ação"})
    assert read_json(path) == {"n": 3, "p": 0.5, "a": [0, 1], "s": [7], "t": [1, 2], "path": "x/y", "text": "ação"}
    with pytest.raises(TypeError, match="not JSON serialisable: object"):
        write_json(path, {"x": object()})
    assert read_json(path)["n"] == 3  # the failed write changed nothing
    for damaged in (b'{"n": 3', b'{"n": "\xff"}'):
        path.write_bytes(damaged)
        with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: not valid JSON .*delete the run folder"):
            read_json(path)
