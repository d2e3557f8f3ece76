"""run.kernel: what `mcqa run`'s kernel does for each combination, here in this process (KernelRuns is a plain
object): open decides the folder's state and holds its lock until close, which moves the executed notebook in and
then writes summary.json (the run is complete only with its notebook);
a fresh run's state is decided twice in all; a complete folder is answered without a lock, a foreign one refused,
a busy one reported with its holder; the run notebook can only write the run opened for it."""
from __future__ import annotations

import json
import os

import pytest
from held_lock import held_by_another_process
from lookup_backend import demo_table, lookup_cache, lookup_job

import mcqa_toolkit.records.state as state_mod
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.state import RunState
from mcqa_toolkit.run.kernel import KernelRuns
from mcqa_toolkit.run.recipe import run_job


@pytest.fixture(scope="module")
def table():
    return demo_table()


def _runs(table) -> KernelRuns:
    runs = KernelRuns()
    runs.backends = lookup_cache(table)
    return runs


def test_open_run_close_writes_the_run_under_one_lock_deciding_its_state_twice(tmp_path, table, monkeypatch):
    decided = []
    real = state_mod.run_state
    monkeypatch.setattr(state_mod, "run_state", lambda rd, identity: decided.append(rd.dir) or real(rd, identity))
    job, runs = lookup_job(tmp_path), _runs(table)
    assert runs.open(job.to_dict()) == {"state": "new"}
    assert json.loads(job.run_dir.lock_file.read_text())["pid"] == os.getpid()   # held from open ...
    result = runs.run(job, progress=False)
    assert job.run_dir.is_complete() and not job.run_dir.summary_file.exists()   # complete once the notebook is in
    executed = tmp_path / "executed.ipynb"
    executed.write_text('{"cells": []}')
    headline = runs.close(str(executed))
    assert job.run_dir.holder() is None and job.run_dir.lock_file.read_text() == ""   # ... to close
    assert job.run_dir.notebook.read_text() == '{"cells": []}' and executed.exists()
    assert decided == [job.run_dir.dir] * 2
    assert headline == {k: result.summary[k] for k in ("accuracy", "kappa", "n_items", "shuffles")}
    assert_same_records(result.records, run_job(lookup_job(tmp_path / "alone"), lookup_cache(table),
                                                progress=False).records)
    again = runs.open(job.to_dict())
    assert again == {"state": "complete", "summary": headline} and runs.close() == {}


def test_a_foreign_or_busy_folder_is_answered_not_raised_and_the_notebook_writes_only_its_run(tmp_path, table):
    runs = _runs(table)
    run_job(lookup_job(tmp_path), runs.backends, progress=False)
    shuffled = lookup_job(tmp_path, shuffles=3)
    refused = runs.open(shuffled.to_dict())
    assert refused["state"] == "refused" and "holds a different run, made with strategy_hash" in refused["why"]
    busy = lookup_job(tmp_path / "busy")
    with held_by_another_process(busy.run_dir.dir) as holder:
        locked = runs.open(busy.to_dict())
    assert locked["state"] == "locked" and locked["why"].startswith(f"pid {holder.pid} on host ")
    with pytest.raises(RuntimeError, match="no run folder is open in this kernel"):
        runs.run(busy, progress=False)
    assert runs.open(busy.to_dict())["state"] == RunState.NEW.value   # the holder wrote nothing but its lock
    with pytest.raises(RuntimeError, match="is not the one opened for it"):
        runs.run(lookup_job(tmp_path / "elsewhere"), progress=False)
    runs.end()
    assert busy.run_dir.holder() is None
