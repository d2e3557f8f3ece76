"""records.state: what a run folder holds (NEW, RESUMABLE, COMPLETE, or another run refused naming the fields of its
identity that differ) and open_for_write, the one way in for a writer (check, before_lock, lock, check again): a
complete run is read without the lock, a folder another process is writing is refused before anything is touched,
a killed writer's leftovers are removed once the lock is held, what the writer prepares is done only for a run it
will write and before the lock, a run finished meanwhile is seen under the lock, and a fresh run_job decides its
folder's state twice."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from held_lock import held_by_another_process
from lookup_backend import demo_table, lookup_cache, lookup_job

import mcqa_toolkit.records.state as state_mod
from mcqa_toolkit.items import Item
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.factory import make_record, run_fields
from mcqa_toolkit.records.identity import RunIdentity
from mcqa_toolkit.records.lock import RunLocked
from mcqa_toolkit.records.state import RunRefused, RunState, check_writable, open_for_write, run_state
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run.recipe import prepare, run_job


@pytest.fixture(scope="module")
def table():
    return demo_table()




# ---- the folder of a real job, through run_job ---------------------------------------------------------------
def test_run_state_new_resumable_complete_and_refused(tmp_path, table, killed_at_call):
    import mcqa_toolkit.run.runner as runner_mod

    job = lookup_job(tmp_path)
    identity = prepare(job).identity
    assert run_state(job.run_dir, identity) is RunState.NEW
    with killed_at_call(runner_mod, "ask", 3):
        run_job(job, lookup_cache(table), progress=False)
    assert run_state(job.run_dir, identity) is RunState.RESUMABLE
    for other, field in ((lookup_job(tmp_path, shuffles=3), "strategy_hash"),
                         (lookup_job(tmp_path, strategy="S5"), "strategy_hash"),
                         (lookup_job(tmp_path, limit=5), "dataset_fingerprint"),
                         (dataclasses.replace(lookup_job(tmp_path), language="es"), "dataset_fingerprint")):
        with pytest.raises(RunRefused, match=f"holds a different run, made with (.* )?{field} "):
            run_job(other, lookup_cache(table), progress=False)
    resumed = run_job(job, lookup_cache(table), progress=False)
    assert resumed.state is RunState.RESUMABLE and len(resumed.records) == 8
    clean = run_job(lookup_job(tmp_path / "clean"), lookup_cache(table), progress=False)
    assert_same_records(resumed.records, clean.records)


def test_a_fresh_run_job_decides_its_folder_state_twice(tmp_path, table, monkeypatch):
    """Once before the model loads, once more under the lock (the issue counted 6 before)."""
    decided = []
    real = state_mod.run_state
    monkeypatch.setattr(state_mod, "run_state", lambda rd, identity: decided.append(rd.dir) or real(rd, identity))
    run_job(lookup_job(tmp_path), lookup_cache(table), progress=False)
    assert decided == [tmp_path / "run"] * 2


def test_folders_made_another_way_are_refused_with_one_sentence(tmp_path, table):
    job = lookup_job(tmp_path)
    job.run_dir.append([{"item_id": "x", "shuffle": 0}])
    with pytest.raises(RunRefused, match=r"holds records but no run.json"):
        run_job(job, lookup_cache(table), progress=False)
    job.run_dir.write_run_info({"identity": {"what": "else"}})
    with pytest.raises(RunRefused, match=r"run.json: not a run identity"):
        run_state(job.run_dir, prepare(job).identity)


# ---- one folder, written by hand ----------------------------------------------------------------------------
IDENTITY = RunIdentity("hf:m", "demo", "f1", "h1")


def _record(item_id: str) -> dict:
    item = Item(item_id=item_id, source="t", exam="e", stem="?", options=("a", "b"), answer=0)
    return make_record(item, run_fields(model="m"), choice=0)


def _started(path: Path, identity: RunIdentity = IDENTITY) -> RunDir:
    """A run folder whose run started (run.json) and wrote one record."""
    rd = RunDir(path)
    rd.write_run_info({"identity": identity.to_dict()})
    rd.append([_record("q1")])
    return rd


def _finish(rd: RunDir, identity: RunIdentity = IDENTITY) -> None:
    rd.finalize({"identity": identity.to_dict()})
    rd.write_summary({"accuracy": 1.0}, identity)


def test_a_folder_holding_another_run_is_refused_naming_the_fields_that_differ(tmp_path):
    rd = _started(tmp_path / "run")
    assert run_state(rd, IDENTITY) is RunState.RESUMABLE
    with pytest.raises(RunRefused) as refused:
        run_state(rd, RunIdentity("hf:m", "demo", "f2", "h1"))
    assert str(refused.value) == (f"{rd.dir} holds a different run, made with dataset_fingerprint 'f1' (this run: "
                                  "'f2'); use another output folder or delete it")
    with pytest.raises(RunRefused) as refused:   # every field that differs, and only those
        run_state(rd, RunIdentity("hf:other", "demo", "f1", "h2", judges=("hf:j",), judge_combine="mean"))
    message = str(refused.value)
    assert "model 'hf:m' (this run: 'hf:other'); strategy_hash 'h1' (this run: 'h2'); judges [] (this run: " \
           "['hf:j']); judge_combine '' (this run: 'mean')" in message and "dataset" not in message


def test_complete_needs_the_compacted_records_and_the_summary(tmp_path):
    rd = RunDir(tmp_path / "run")
    assert check_writable(rd, IDENTITY) is RunState.NEW and not rd.dir.exists()  # asking creates nothing
    _started(rd.dir)
    rd.finalize({"identity": IDENTITY.to_dict()})
    assert rd.is_compacted() and not rd.is_complete()   # summary.json not written yet
    assert run_state(rd, IDENTITY) is RunState.RESUMABLE
    with open_for_write(rd, IDENTITY) as folder:
        folder.complete({"accuracy": 1.0})
    assert rd.is_complete() and run_state(rd, IDENTITY) is RunState.COMPLETE
    assert json.loads(rd.summary_file.read_text())["identity_hash"] == IDENTITY.hash
    assert rd.summary() == {"accuracy": 1.0}   # the numbers, without the identity


def test_open_for_write_takes_the_lock_removes_leftovers_and_refuses_before_touching_anything(tmp_path):
    rd = _started(tmp_path / "run")
    leftovers = [rd.dir / ".records.parquet.999999.tmp", rd.dir / ".summary.json.999998.tmp"]
    for f in leftovers:
        f.write_text("half a file of a killed writer")
    with open_for_write(rd, IDENTITY) as folder:
        assert folder.state is RunState.RESUMABLE and folder.identity == IDENTITY
        assert not any(f.exists() for f in leftovers) and len(rd.read_records()) == 1
        assert json.loads(rd.lock_file.read_text())["pid"] == os.getpid()  # held while open
        folder.start({"n_items": 1})
    assert rd.run_info() == {"n_items": 1, "identity": IDENTITY.to_dict(), "identity_hash": IDENTITY.hash}
    assert rd.lock_file.read_text() == "" and rd.holder() is None  # released
    foreign = _started(tmp_path / "foreign", RunIdentity("hf:m", "demo", "f1", "h9"))
    (foreign.dir / ".records.parquet.1.tmp").write_text("")
    with pytest.raises(RunRefused, match="made with strategy_hash 'h9'"):
        with open_for_write(foreign, IDENTITY):
            pass
    assert sorted(f.name for f in foreign.dir.iterdir()) == [".records.parquet.1.tmp", "records.jsonl", "run.json"]


def test_a_folder_another_process_is_writing_is_refused_and_a_complete_one_read_without_the_lock(tmp_path):
    rd = _started(tmp_path / "run")
    theirs = rd.dir / ".records.parquet.12345.tmp"  # the holder's file being written
    with held_by_another_process(rd.dir) as holder:
        theirs.write_text("being written")
        with pytest.raises(RunLocked, match=f"is being run by another process \\(pid {holder.pid} on host "):
            check_writable(rd, IDENTITY)
        with pytest.raises(RunLocked, match=f"pid {holder.pid} "):
            with open_for_write(rd, IDENTITY):
                pass
        assert theirs.exists() and rd.run_info() == {"identity": IDENTITY.to_dict()}  # nothing touched
        _finish(rd)  # the other process finishes the run while it still holds the lock
        assert check_writable(rd, IDENTITY) is RunState.COMPLETE
        with open_for_write(rd, IDENTITY) as folder:  # nothing will be written: no lock is taken
            assert folder.state is RunState.COMPLETE and rd.load()["item_id"].tolist() == ["q1"]


def test_a_complete_run_is_yielded_without_creating_the_lock(tmp_path):
    rd = _started(tmp_path / "run")
    _finish(rd)
    with open_for_write(rd, IDENTITY) as folder:
        assert folder.state is RunState.COMPLETE
    assert not rd.lock_file.exists()


def test_before_lock_runs_only_for_a_run_to_write_before_the_lock_and_a_run_finished_meanwhile_is_seen(tmp_path):
    calls = []

    def load_model():   # what run_job does between the two decisions
        calls.append(RunDir(tmp_path / "run").lock_file.exists())
        return "model"

    rd = _started(tmp_path / "run")
    with open_for_write(rd, IDENTITY, load_model) as folder:
        assert folder.prepared == "model" and folder.state is RunState.RESUMABLE and not folder.meanwhile
        assert json.loads(rd.lock_file.read_text())["pid"] == os.getpid()
    assert calls == [False]   # called once, before the lock file existed
    foreign = _started(tmp_path / "foreign", RunIdentity("hf:m", "demo", "f1", "h9"))
    with pytest.raises(RunRefused):
        with open_for_write(foreign, IDENTITY, load_model):
            pass
    with held_by_another_process(tmp_path / "busy") as _:
        with pytest.raises(RunLocked):
            with open_for_write(RunDir(tmp_path / "busy"), IDENTITY, load_model):
                pass
    _finish(rd)
    with open_for_write(rd, IDENTITY, load_model) as folder:
        assert folder.state is RunState.COMPLETE and folder.prepared is None and not folder.meanwhile
    assert len(calls) == 1   # neither a foreign, a busy nor a complete folder costs the load

    late = _started(tmp_path / "late")
    with open_for_write(late, IDENTITY, lambda: _finish(late)) as folder:   # another writer finishes it meanwhile
        assert folder.state is RunState.COMPLETE and folder.meanwhile
        assert json.loads(late.lock_file.read_text())["pid"] == os.getpid()   # decided under the lock
    assert late.holder() is None
