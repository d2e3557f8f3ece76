"""records.state: what a run folder holds (NEW, RESUMABLE, COMPLETE, or another run refused naming the key that
differs) and the one guarded entry for writing it (open_for_write: state, lock, state): a complete run is read
without the lock, a folder another process is writing is refused before anything is touched, a killed writer's
leftovers are removed once the lock is held, and OpenRun.start checks the identity keys the open did not."""
from __future__ import annotations

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
from mcqa_toolkit.records.lock import RunLocked
from mcqa_toolkit.records.state import RunRefused, RunState, check_writable, open_for_write, run_identity, run_state
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run.recipe import run_job


@pytest.fixture(scope="module")
def table():
    return demo_table()




# ---- the folder of a real job, through run_job ---------------------------------------------------------------
def test_run_state_new_resumable_complete_and_refused(tmp_path, table, killed_at_call):
    import mcqa_toolkit.run.runner as runner_mod

    job = lookup_job(tmp_path)
    assert run_state(job.run_dir, {"job": job.identity()}) is RunState.NEW
    with killed_at_call(runner_mod, "ask", 3):
        run_job(job, lookup_cache(table), progress=False)
    assert run_state(job.run_dir, {"job": job.identity()}) is RunState.RESUMABLE
    for other, key in ((lookup_job(tmp_path, shuffles=3), "SHUFFLES"), (lookup_job(tmp_path, strategy="S5"), "STRATEGY"),
                       (lookup_job(tmp_path, limit=5), "LIMIT")):
        with pytest.raises(RunRefused, match=f"holds a different run, made with job {key} "):
            run_job(other, lookup_cache(table), progress=False)
    resumed = run_job(job, lookup_cache(table), progress=False)
    assert resumed.state is RunState.RESUMABLE and len(resumed.records) == 8
    clean = run_job(lookup_job(tmp_path / "clean"), lookup_cache(table), progress=False)
    assert_same_records(resumed.records, clean.records)


def test_folders_made_another_way_are_refused_with_one_sentence(tmp_path, table):
    job = lookup_job(tmp_path)
    job.run_dir.append([{"item_id": "x", "shuffle": 0}])
    with pytest.raises(RunRefused, match=r"holds records but no run.json"):
        run_job(job, lookup_cache(table), progress=False)
    job.run_dir.write_run_info({"strategy_hash": "abc"})  # e.g. run() from Python: no job parameters
    with pytest.raises(RunRefused, match=r"recorded no 'job'"):
        run_state(job.run_dir, {"job": job.identity()})


# ---- one folder, written by hand ----------------------------------------------------------------------------
JOB = {"MODEL": "m", "SHUFFLES": 2, "LIMIT": 4}
PROVENANCE = {"strategy_hash": "h1", "dataset_fingerprint": "f1", "model": {"source": "m1"}, "job": JOB}


def _record(item_id: str) -> dict:
    item = Item(item_id=item_id, source="t", exam="e", stem="?", options=("a", "b"), answer=0)
    return make_record(item, run_fields(model="m"), choice=0)


def _started(path: Path, provenance: dict = PROVENANCE) -> RunDir:
    """A run folder whose run started (run.json) and wrote one record."""
    rd = RunDir(path)
    rd.write_run_info(provenance)
    rd.append([_record("q1")])
    return rd


def _finish(rd: RunDir, provenance: dict = PROVENANCE) -> None:
    rd.finalize(provenance)
    rd.write_summary({"accuracy": 1.0}, {})


def test_a_folder_holding_another_run_is_refused_naming_the_key_that_differs(tmp_path):
    rd = _started(tmp_path / "run")
    assert run_state(rd, {"strategy_hash": "h1", "model_source": "m1", "job": JOB}) is RunState.RESUMABLE
    with pytest.raises(RunRefused) as refused:
        run_state(rd, {"strategy_hash": "h1", "dataset_fingerprint": "f2"})
    assert str(refused.value) == (f"{rd.dir} holds a different run, made with dataset_fingerprint 'f1' (this run: "
                                  "'f2'); use another output folder or delete it")
    with pytest.raises(RunRefused, match=r"made with model_source 'm1' \(this run: 'm2'\)"):
        run_state(rd, {"model_source": "m2"})  # read from the recorded model's source
    with pytest.raises(RunRefused, match=r"made with judges \[\] \(this run: \['j'\]\)"):
        run_state(rd, {"judges": ["j"]})  # a run without judges recorded none
    with pytest.raises(RunRefused) as refused:  # job parameters: only the ones that differ are named
        run_state(rd, {"job": {**JOB, "SHUFFLES": 3}})
    assert "made with job SHUFFLES 2 (this run: 3);" in str(refused.value)
    assert "MODEL" not in str(refused.value) and "LIMIT" not in str(refused.value)
    with pytest.raises(RunRefused, match="holds a run that recorded no 'seed'"):
        run_state(rd, {"seed": 0})


def test_complete_needs_the_compacted_records_and_the_summary(tmp_path):
    rd = RunDir(tmp_path / "run")
    assert check_writable(rd, {"job": JOB}) is RunState.NEW and not rd.dir.exists()  # asking creates nothing
    _started(rd.dir)
    rd.finalize(PROVENANCE)
    assert rd.is_complete() and run_state(rd, {"job": JOB}) is RunState.RESUMABLE  # summary.json not written yet
    rd.write_summary({"accuracy": 1.0}, {})
    assert run_state(rd, {"job": JOB}) is RunState.COMPLETE


def test_open_for_write_takes_the_lock_removes_leftovers_and_refuses_before_touching_anything(tmp_path):
    rd = _started(tmp_path / "run")
    leftovers = [rd.dir / ".records.parquet.999999.tmp", rd.dir / ".summary.json.999998.tmp"]
    for f in leftovers:
        f.write_text("half a file of a killed writer")
    with open_for_write(rd, {"job": JOB}) as folder:
        assert folder.state is RunState.RESUMABLE and folder.identity == {"job": JOB}
        assert not any(f.exists() for f in leftovers) and len(rd.read_records()) == 1
        assert json.loads(rd.lock_file.read_text())["pid"] == os.getpid()  # held while open
    assert rd.lock_file.read_text() == "" and rd.holder() is None  # released
    foreign = _started(tmp_path / "foreign", {**PROVENANCE, "job": {**JOB, "LIMIT": 5}})
    (foreign.dir / ".records.parquet.1.tmp").write_text("")
    with pytest.raises(RunRefused, match="made with job LIMIT 5"):
        with open_for_write(foreign, {"job": JOB}):
            pass
    assert sorted(f.name for f in foreign.dir.iterdir()) == [".records.parquet.1.tmp", "records.jsonl", "run.json"]


def test_a_folder_another_process_is_writing_is_refused_and_a_complete_one_read_without_the_lock(tmp_path):
    rd = _started(tmp_path / "run")
    theirs = rd.dir / ".records.parquet.12345.tmp"  # the holder's file being written
    with held_by_another_process(rd.dir) as holder:
        theirs.write_text("being written")
        with pytest.raises(RunLocked, match=f"is being run by another process \\(pid {holder.pid} on host "):
            check_writable(rd, {"job": JOB})
        with pytest.raises(RunLocked, match=f"pid {holder.pid} "):
            with open_for_write(rd, {"job": JOB}):
                pass
        assert theirs.exists() and rd.run_info() == PROVENANCE  # nothing touched
        _finish(rd)  # the other process finishes the run while it still holds the lock
        assert check_writable(rd, {"job": JOB}) is RunState.COMPLETE
        with open_for_write(rd, {"job": JOB}) as folder:  # nothing will be written: no lock is taken
            assert folder.state is RunState.COMPLETE and rd.load()["item_id"].tolist() == ["q1"]


def test_a_complete_run_is_yielded_without_creating_the_lock(tmp_path):
    rd = _started(tmp_path / "run")
    _finish(rd)
    with open_for_write(rd, {"job": JOB}) as folder:
        assert folder.state is RunState.COMPLETE
    assert not rd.lock_file.exists()


def test_start_checks_only_the_identity_keys_the_open_did_not(tmp_path, monkeypatch):
    rd = _started(tmp_path / "run")
    compared = []
    real = state_mod.run_state
    monkeypatch.setattr(state_mod, "run_state", lambda run_dir, identity: compared.append(set(identity)) or
                        real(run_dir, identity))
    with open_for_write(rd, {"job": JOB}) as folder:  # what run_job opens with: the job's parameters
        at_open, compared[:] = set().union(*compared), []
        with pytest.raises(RunRefused, match=r"made with dataset_fingerprint 'f1' \(this run: 'f2'\)"):
            folder.start({**PROVENANCE, "dataset_fingerprint": "f2"})  # e.g. the dataset's file changed
        assert rd.run_info() == PROVENANCE  # the refused start recorded nothing
        compared.clear()
        folder.start({**PROVENANCE, "n_items": 1})
        assert set().union(*compared) == set(run_identity(PROVENANCE)) and not at_open & set().union(*compared)
    assert rd.run_info() == {**PROVENANCE, "n_items": 1}
    compared.clear()
    with open_for_write(rd, run_identity(PROVENANCE)) as folder:  # what run() opens with: every identity key
        compared.clear()
        folder.start(PROVENANCE)
        assert compared == []  # each key is compared once: nothing is left for start
