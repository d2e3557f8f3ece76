"""records.lock: the one-writer lock of a run folder in one process (re-entrant for its thread, refused to another
thread), its holder record, and a lock another process holds, never lent. Several processes: the fault
suite (tests/faults/test_one_writer.py)."""
from __future__ import annotations

import os
import threading

import pytest
from held_lock import held_by_another_process

from mcqa_toolkit.records.lock import RunLock, RunLocked, lock_holder


def test_reentrant_for_its_thread_and_refused_to_another(tmp_path):
    lock = RunLock(tmp_path / "run")
    with lock:
        with RunLock(tmp_path / "run"):  # run_job holds it and calls run(), which takes it again
            assert lock_holder(tmp_path / "run") is None  # held by this very thread
        assert lock.path.read_bytes()  # still held: the holder is recorded
        refused = []

        def other():
            try:
                RunLock(tmp_path / "run").acquire()
            except RunLocked as e:
                refused.append(str(e))

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert refused and f"pid {os.getpid()} " in refused[0] and "of this process" in refused[0]
    assert lock.path.read_bytes() == b"" and lock_holder(tmp_path / "run") is None


def test_a_lock_another_process_holds_is_refused_naming_it_and_never_lent(tmp_path, monkeypatch):
    """The holder is the only writer: its record names it, and nothing in this process's environment (the
    MCQA_RUN_LOCK_LENDER variable `mcqa run` gave its kernel before) makes its lock this process's."""
    with held_by_another_process(tmp_path / "run") as proc:
        holder = lock_holder(tmp_path / "run")
        assert holder is not None and holder["pid"] == proc.pid
        monkeypatch.setenv("MCQA_RUN_LOCK_LENDER", str(proc.pid))
        assert lock_holder(tmp_path / "run") == holder
        with pytest.raises(RunLocked, match=f"pid {proc.pid} on host "):
            RunLock(tmp_path / "run").acquire()
