"""A full disk, for real: the run goes on in a child process whose files may not grow past a limit
(RLIMIT_FSIZE, what `ulimit -f` sets; the kernel then fails the write with EFBIG as it fails it with ENOSPC on
a full disk). One clear error naming the file, the JSONL stays readable, and the resume completes with the
records of an undisturbed run."""
from __future__ import annotations

import signal

import pytest
from faults_children import in_child, run_lookup

from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.store import RunDir

pytestmark = pytest.mark.faults


def _one_error(result, path) -> str:
    assert result.exitcode == 0 and result.value[:2] == ("error", "RunWriteError"), result
    message = result.value[2]
    assert message.startswith(f"{path}: could not write ") and "File too large" in message and "\n" not in message
    return message


def test_disk_full_while_appending_records(tmp_path, reference_run, figures):
    ref = reference_run[0]
    lines = ref.jsonl.read_bytes().splitlines(keepends=True)
    limit = sum(len(x) for x in lines[:3]) + len(lines[3]) // 2  # the 4th record does not fit
    assert ref.run_info_file.stat().st_size < limit < ref.jsonl.stat().st_size
    out = tmp_path / "run"
    rd = RunDir(out)
    # the run's items.jsonl (larger than the limit: RLIMIT_FSIZE limits every file) is written before any record;
    # a first child stops there, and the child under the limit resumes, leaving items.jsonl as it is
    assert in_child(run_lookup, str(out), kill_in="records_of").exitcode == -signal.SIGKILL
    assert rd.items_file.exists() and not rd.read_records()
    message = _one_error(in_child(run_lookup, str(out), fsize=limit), rd.jsonl)
    assert "the records written before are kept" in message
    raw = rd.jsonl.read_bytes()
    kept = len(raw.splitlines())  # about 3 (record sizes vary with their timing field)
    assert raw.endswith(b"\n") and 1 <= kept < len(lines) and len(raw) <= limit  # the partial line taken back
    assert len(rd.read_records()) == kept and rd.jsonl.read_bytes() == raw and not rd.is_complete()
    resumed = in_child(run_lookup, str(out))
    assert resumed.value == ("ok", None), resumed
    # equality rule: `n_forwarded_tokens` ignored because a resumed run re-encodes its run prefix
    assert_same_records(rd.load(), reference_run[1], ignore=["n_forwarded_tokens"])
    assert len(rd.jsonl.read_bytes().splitlines()) == len(lines)
    figures.add("disk_full_append", cases=1, file_size_limit_bytes=limit, records_kept=kept)


def test_disk_full_while_writing_parquet(tmp_path, reference_run, figures):
    out = tmp_path / "run"
    rd = RunDir(out)
    assert in_child(run_lookup, str(out), kill_in="finalize").exitcode == -signal.SIGKILL  # every record appended
    jsonl = rd.jsonl.read_bytes()
    parquet_size = reference_run[0].parquet.stat().st_size
    limit = max(rd.run_info_file.stat().st_size, len(rd.lock_file.read_bytes())) + 256   # items.jsonl is not rewritten
    assert limit < parquet_size
    message = _one_error(in_child(run_lookup, str(out), fsize=limit), rd.parquet)
    assert "records.jsonl is intact" in message
    assert rd.jsonl.read_bytes() == jsonl and not rd.parquet.exists() and not rd.is_complete()
    assert not list(out.glob(".*.tmp"))  # no half-written file left behind
    resumed = in_child(run_lookup, str(out))
    assert resumed.value == ("ok", None), resumed
    # equality rule: `n_forwarded_tokens` ignored because a resumed run re-encodes its run prefix
    assert_same_records(rd.load(), reference_run[1], ignore=["n_forwarded_tokens"])
    figures.add("disk_full_parquet", cases=1, file_size_limit_bytes=limit, parquet_bytes=parquet_size)
