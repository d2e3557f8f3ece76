"""run.kernel: what the run notebook's kernel does, here in this process (KernelRuns is a plain object). Under
`mcqa run` the notebook's run opens its folder (state decided twice, lock held), writes it, and keeps the lock until
close, which copies the executed notebook in and then writes summary.json (the run is complete only with its
notebook); a complete folder is read back holding nothing, a foreign one refused, a busy one refused naming its
holder (the exceptions papermill reports to the grid); notebook_run goes to RUNS when the kernel holds one and to
run_job alone; the control requests are served by name (the extension the grid's kernel loads)."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
from held_lock import held_by_another_process
from lookup_backend import demo_table, lookup_cache, lookup_job

import mcqa_toolkit.records.state as state_mod
import mcqa_toolkit.run.kernel as kernel_mod
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.lock import RunLocked
from mcqa_toolkit.records.state import RunRefused, RunState
from mcqa_toolkit.run.kernel import RUNS, TARGET, KernelRuns, notebook_run
from mcqa_toolkit.run.recipe import run_job


@pytest.fixture(scope="module")
def table():
    return demo_table()


def _runs(table) -> KernelRuns:
    runs = KernelRuns()
    runs.backends = lookup_cache(table)
    return runs


def test_run_then_close_writes_the_run_under_one_lock_deciding_its_state_twice(tmp_path, table, monkeypatch):
    decided = []
    real = state_mod.run_state
    monkeypatch.setattr(state_mod, "run_state", lambda rd, identity: decided.append(rd.dir) or real(rd, identity))
    job, runs = lookup_job(tmp_path), _runs(table)
    result = runs.run(job, progress=False)
    assert result.state is RunState.NEW and len(result.records) == 8
    assert json.loads(job.run_dir.lock_file.read_text())["pid"] == os.getpid()   # held from the run ...
    assert job.run_dir.is_compacted() and not job.run_dir.is_complete()        # complete once the notebook is in
    executed = tmp_path / "executed.ipynb"
    executed.write_text('{"cells": []}')
    runs.close(str(executed))
    assert job.run_dir.holder() is None and job.run_dir.lock_file.read_text() == ""   # ... to close
    assert job.run_dir.notebook.read_text() == '{"cells": []}' and executed.exists() and job.run_dir.is_complete()
    assert decided == [job.run_dir.dir] * 2
    assert job.run_dir.summary() == result.summary
    assert_same_records(result.records, run_job(lookup_job(tmp_path / "alone"), lookup_cache(table),
                                                progress=False).records)
    again = runs.run(job, progress=False)   # complete: read back, nothing held, nothing to close
    assert again.state is RunState.COMPLETE and again.summary == result.summary and job.run_dir.holder() is None
    runs.close(str(tmp_path / "other.ipynb"))
    assert job.run_dir.notebook.read_text() == '{"cells": []}'


def test_a_foreign_or_busy_folder_fails_the_run_naming_why_and_writes_nothing(tmp_path, table):
    runs = _runs(table)
    run_job(lookup_job(tmp_path), runs.backends, progress=False)
    with pytest.raises(RunRefused, match="holds a different run, made with strategy_hash"):
        runs.run(lookup_job(tmp_path, shuffles=3), progress=False)
    busy = lookup_job(tmp_path / "busy")
    with held_by_another_process(busy.run_dir.dir) as holder:
        with pytest.raises(RunLocked, match=f"pid {holder.pid} on host "):
            runs.run(busy, progress=False)
    assert sorted(f.name for f in busy.run_dir.dir.iterdir()) == ["run.lock"]   # the holder's lock, nothing else
    runs.close(str(tmp_path / "executed.ipynb"))   # nothing open: nothing copied
    assert runs.run(busy, progress=False).state is RunState.NEW
    runs.end()   # the kernel shuts down: the run it wrote is closed (summary.json) and released
    assert busy.run_dir.holder() is None and busy.run_dir.is_complete() and not busy.run_dir.notebook.exists()


def test_notebook_run_writes_through_the_kernels_runs_or_alone(tmp_path, table, monkeypatch):
    job, runs = lookup_job(tmp_path), _runs(table)
    parameters = {**job.parameters(), RUNS: runs, "In": []}   # the notebook's globals()
    result = notebook_run(parameters)
    assert result.state is RunState.NEW and not job.run_dir.is_complete()   # RUNS keeps it open for the grid ...
    assert json.loads(job.run_dir.lock_file.read_text())["pid"] == os.getpid()
    runs.close()
    assert job.run_dir.is_complete()   # ... until close
    alone = []
    monkeypatch.setattr(kernel_mod, "run_job", lambda j: alone.append(j) or "ran")
    assert notebook_run(job.parameters()) == "ran" and alone == [job]   # no RUNS: run.recipe.run_job, every step


def test_the_extension_serves_start_batch_close_and_end_by_name(tmp_path, table, monkeypatch):
    """What the grid's kernel loads at start: its requests, each a function of JSON arguments."""
    served = {}
    monkeypatch.setattr("mcqa_toolkit.run.session.serve", lambda ip, target, verbs: served.update({target: verbs}))
    ip = SimpleNamespace(user_ns={})
    kernel_mod.load_ipython_extension(ip)
    verbs = served[TARGET]
    assert sorted(verbs) == ["batch", "close", "end", "start"]
    with pytest.raises(RuntimeError, match="no RUNS in this kernel"):
        verbs["close"](notebook=None)
    verbs["start"](cluster=None)
    runs = ip.user_ns[RUNS]
    runs.backends = lookup_cache(table)
    job = lookup_job(tmp_path)
    runs.run(job, progress=False)
    executed = tmp_path / "executed.ipynb"
    executed.write_text("{}")
    verbs["close"](notebook=str(executed))
    assert job.run_dir.is_complete() and job.run_dir.notebook.read_text() == "{}"
    with pytest.raises(ValueError, match="batch mode must be 'submit' or 'fetch', got 'later'"):
        verbs["batch"](mode="later", parameters=job.parameters())
    verbs["batch"](mode="submit", parameters=job.parameters())   # a complete run: nothing to submit
    assert not job.run_dir.batch_file.exists()
    verbs["end"]()
    verbs["start"](cluster=None)
    assert ip.user_ns[RUNS] is not runs
