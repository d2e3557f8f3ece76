"""run.grid (`mcqa run`): the schedule (model by model, cheapest strategies first), the dry run (complete runs
counted, a folder holding another run reported, from a read of the folders: no kernel), what the grid hands the
kernel for one combination (the notebook's parameters and JSON control requests only) and what it reads back from
the folder and from the exception papermill names (processed, completed meanwhile, refused, running elsewhere), a
combination another process is running skipped with nothing written by this grid, and the grid executed in one
kernel that decides, locks and writes each run folder (run.kernel): resume after a failure or a kill, failures
reported at the end."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from held_lock import held_by_another_process
from lookup_backend import demo_table, lookup_cache, lookup_job
from papermill.exceptions import PapermillExecutionError
from paths import REPO

from mcqa_toolkit import cli
from mcqa_toolkit.records.results import load_results
from mcqa_toolkit.records.state import RunState, run_state
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.resources import notebooks_dir
from mcqa_toolkit.run import grid, jobs
from mcqa_toolkit.run.kernel import RUNS, TARGET, KernelRuns, notebook_run
from mcqa_toolkit.run.recipe import prepare, run_job


def test_schedule_runs_cheapest_first_model_by_model():
    params = {"models": ["m1", "m2"], "datasets": ["demo"], "languages": ["pt", "en"],
              "strategies": ["S1", {"base": "enem_4shot", "shuffles": 5}, "S5", "nope"]}
    order = grid.schedule(jobs.expand(params))
    assert [j.model for j in order] == ["m1"] * 8 + ["m2"] * 8  # each model is loaded once
    first = order[:8]
    assert [j.language for j in first] == ["pt", "en"] * 4  # every language of a strategy early
    costs = [grid.estimated_cost(j) for j in first]
    assert costs == sorted(costs) and costs[0] == 0 and first[0].strategy == "nope"  # fails at once, first
    # 5 shuffles of a 4-shot prompt cost more than 12 generated tokens (batched) + Min-K%: the letters run last
    assert first[-1].strategy == {"base": "enem_4shot", "shuffles": 5} and costs[-1] > costs[-3]


def _three_jobs(tmp_path: Path) -> tuple[Path, list[jobs.Job]]:
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump({"output_dir": "out", "models": ["m"], "datasets": ["demo"], "languages": ["pt"],
                                 "strategies": ["S1", "S5", "S4"]}))
    return p, jobs.expand(jobs.load_params(p), base_dir=tmp_path)


def test_dry_run_counts_complete_runs_and_reports_a_folder_holding_another_run(tmp_path, capsys):
    p, (done, foreign, todo) = _three_jobs(tmp_path)
    identity = prepare(done).identity
    done.run_dir.write_run_info({"identity": identity.to_dict()})  # a finished run (records.state: COMPLETE)
    pd.DataFrame({"item_id": ["q"], "shuffle": [0]}).to_parquet(done.run_dir.parquet)
    done.run_dir.provenance_file.write_text(json.dumps({"complete": True}))
    done.run_dir.write_summary({"accuracy": 0.5}, identity)
    other = dataclasses.replace(prepare(foreign).identity, strategy_hash="0" * 12)
    foreign.run_dir.write_run_info({"identity": other.to_dict()})
    assert grid.dry_run_params(p, tmp_path) == 1
    out = capsys.readouterr().out
    assert "3 combinations, 1 already complete, 1 to run" in out
    assert f"would run {todo.run_dir.name}" in out and f"would run {done.run_dir.name}" not in out
    assert f"FAILED {foreign.run_dir.name}: {foreign.run_dir.dir} holds a different run, made with strategy_hash " \
           f"'000000000000' (this run: '{prepare(foreign).identity.strategy_hash}')" in out
    assert not todo.run_dir.dir.exists()  # a dry run creates nothing
    with pytest.raises(ValueError, match="batch must be None, 'submit' or 'fetch', got 'later'"):
        grid.run_params(p, tmp_path / "unused.ipynb", tmp_path, batch="later")


class _KernelHere:
    """The grid's KernelSession with the kernel's side (run.kernel) run in this process: what the grid sends must be
    plain JSON (the notebook's papermill parameters, control requests), and a failing run notebook is papermill's
    PapermillExecutionError naming the exception, as from a real kernel."""

    def __init__(self, runs: KernelRuns):
        self.runs, self.sent = runs, []

    def control(self, target, verb, timeout=None, **args):
        assert target == TARGET and json.loads(json.dumps(args)) == args
        self.sent.append((verb, args))
        if verb == "close":
            self.runs.close(args["notebook"])

    def execute(self, notebook, output, parameters, cwd=None):
        assert json.loads(json.dumps(parameters)) == parameters
        self.sent.append(("execute", parameters))
        # papermill's executed copy, written by this process (each execution's own: papermill records its times)
        Path(output).write_text(json.dumps({"executed": parameters["RUN_DIR"], "execution": len(self.sent)}))
        try:
            notebook_run({**parameters, RUNS: self.runs})   # the notebook's one call, with its globals()
        except Exception as e:
            raise PapermillExecutionError(2, 3, "notebook_run(globals())", type(e).__name__, str(e),
                                          ["Traceback ...", f"{type(e).__name__}: {e}"]) from None


def test_one_combination_crosses_as_its_parameters_and_is_read_back_from_its_folder(tmp_path):
    runs = KernelRuns()
    runs.backends = lookup_cache(demo_table())
    kernel, tally = _KernelHere(runs), grid._Tally()
    job, executed = lookup_job(tmp_path), tmp_path / "executed.ipynb"
    line = grid._one(job, kernel, tmp_path / "run_model.ipynb", executed, None, tally)
    assert kernel.sent == [("execute", job.parameters()), ("close", {"notebook": str(executed)})]
    assert line.startswith("accuracy ") and "(4 items x 2 shuffles)" in line and tally.processed == 1
    assert job.run_dir.is_complete() and job.run_dir.notebook.read_bytes() == executed.read_bytes()
    line = grid._one(job, kernel, tmp_path / "run_model.ipynb", tmp_path / "again.ipynb", None, tally)
    assert line.startswith("complete: accuracy ") and tally.complete == 1   # the notebook read it back, nothing kept
    assert job.run_dir.notebook.read_bytes() == executed.read_bytes()

    foreign = lookup_job(tmp_path, shuffles=3)
    assert grid._one(foreign, kernel, tmp_path / "run_model.ipynb", tmp_path / "f.ipynb", None, tally) == \
        "failed (see below)"
    assert tally.failures[-1][1].startswith(f"{job.run_dir.dir} holds a different run, made with strategy_hash")
    busy = lookup_job(tmp_path / "busy")
    with held_by_another_process(busy.run_dir.dir) as holder:
        line = grid._one(busy, kernel, tmp_path / "run_model.ipynb", tmp_path / "b.ipynb", None, tally)
    assert line.startswith(f"running elsewhere (pid {holder.pid} on host ") and tally.elsewhere == [busy.run_dir.name]
    assert sorted(f.name for f in busy.run_dir.dir.iterdir()) == ["run.lock"]
    broken = lookup_job(tmp_path / "broken", strategy={"base": "S1", "max_new_tokens": 2}, limit=1)
    runs.backends = lookup_cache({})   # every item missing from the table: the run fails in the notebook
    assert grid._one(broken, kernel, tmp_path / "run_model.ipynb", tmp_path / "x.ipynb", None, tally) == \
        "failed (see below)"
    assert tally.failures[-1][1] == "PapermillExecutionError: KeyError: 'demo-bio-01-pt'"
    assert broken.run_dir.notebook.exists() and not broken.run_dir.is_complete()   # kept for the failure report
    assert broken.run_dir.holder() is None and (tally.processed, tally.complete) == (1, 1)
    alone = run_job(lookup_job(tmp_path / "alone"), lookup_cache(demo_table()), progress=False)
    pd.testing.assert_frame_equal(job.run_dir.load().drop(columns=["seconds", "run_id"]),
                                  alone.records.drop(columns=["seconds", "run_id"]))


@pytest.mark.notebooks
def test_a_combination_another_process_is_running_is_skipped_and_nothing_written(tmp_path, capsys):
    """The run notebook finds the folder locked when it opens it in the grid's kernel (run.kernel: RunLocked, which
    papermill names to the grid): nothing is written by this grid, and the grid ends saying what runs elsewhere."""
    p, (job, *_) = _three_jobs(tmp_path)
    p.write_text(yaml.safe_dump({**yaml.safe_load(p.read_text()), "strategies": ["S1"]}))
    with held_by_another_process(job.run_dir.dir) as holder:
        assert grid.run_params(p, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path) == 0
    out = capsys.readouterr().out
    assert f"{job.run_dir.name:<40} running elsewhere (pid {holder.pid} on host {socket.gethostname()}, since " in out
    assert "0 processed, 0 already complete, 0 failed, 1 running elsewhere (run again later to pick up what they " \
           f"leave unfinished): {job.run_dir.name}" in out
    assert [f.name for f in job.run_dir.dir.iterdir()] == ["run.lock"]  # nothing written by this grid


def _params(tmp_path, model_dir, strategies, **extra):
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump({"output_dir": str(tmp_path / "out"), "models": [str(model_dir)],
                                 "datasets": [{"name": "demo"}], "languages": ["pt", "en"],
                                 "strategies": strategies, "limit": 2, "min_k": True, **extra}))
    return p


@pytest.mark.notebooks
def test_run_resume_and_failures(tmp_path, tiny_model_dir, capsys):
    p = _params(tmp_path, tiny_model_dir, [{"base": "enem_1shot", "shuffles": 2}, "S9_does_not_exist"])
    failed = grid.run_params(p, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path)
    out = capsys.readouterr().out
    assert failed == 2 and out.count("  cannot start ") == 2 and "unknown strategy 'S9_does_not_exist'" in out
    assert "FAILED" not in out and not list((tmp_path / "out").glob("*S9*"))   # refused before any folder
    runs = sorted((tmp_path / "out").glob("*__enem_1shot"))
    assert len(runs) == 2
    for run in runs:  # one executed notebook + results + summary per combination
        assert (run / "run_model.ipynb").exists() and (run / "records.parquet").exists()
        summary = json.loads((run / "summary.json").read_text())
        records = pd.read_parquet(run / "records.parquet")
        assert summary["n_records"] == len(records) == 4 and summary["accuracy"] == pytest.approx(
            records.groupby("item_id")["correct"].mean().mean())
        assert len(pd.read_parquet(run / "min_k.parquet")) == 2
    mtimes = [(r / "records.parquet").stat().st_mtime for r in runs]
    p2 = _params(tmp_path, tiny_model_dir, [{"base": "enem_1shot", "shuffles": 2}])
    assert grid.run_params(p2, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path) == 0
    assert "0 processed, 2 already complete, 0 failed" in capsys.readouterr().out
    assert [(r / "records.parquet").stat().st_mtime for r in runs] == mtimes
    assert set(load_results(tmp_path / "out")["language"]) == {"pt", "en"}


def _grid(tmp_path: Path, model_dir: Path, out: str) -> Path:
    p = tmp_path / f"{out}.yaml"
    p.write_text(yaml.safe_dump({"output_dir": str(tmp_path / out), "models": [str(model_dir)],
                                 "datasets": ["demo"], "languages": ["pt", "en"],
                                 "strategies": ["S5", {"base": "S1", "max_new_tokens": 2}], "limit": 3}))
    return p


@pytest.mark.notebooks
def test_killed_mcqa_run_resumes_with_the_records_of_an_uninterrupted_one(tmp_path, tiny_model_dir):
    params = _grid(tmp_path, tiny_model_dir, "killed")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])}
    proc = subprocess.Popen([sys.executable, "-m", "mcqa_toolkit.cli", "run", str(params)], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:  # kill the whole process group (cli + kernel) once the first run has finished, mid-grid
        deadline = time.monotonic() + 300
        while not list((tmp_path / "killed").glob("*/summary.json")) and proc.poll() is None:
            assert time.monotonic() < deadline, "no run finished"
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    killed = jobs.expand(jobs.load_params(params))
    complete = lambda j: run_state(j.run_dir, prepare(j).identity) is RunState.COMPLETE  # noqa: E731
    assert not all(complete(j) for j in killed), "the grid finished before the kill; nothing was tested"
    assert grid.run_params(params, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path) == 0
    assert all(complete(j) for j in killed)
    clean = _grid(tmp_path, tiny_model_dir, "clean")
    assert grid.run_params(clean, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path) == 0
    for job in killed:
        resumed, uninterrupted = (RunDir(job.run_dir.dir).load(),
                                  RunDir(tmp_path / "clean" / job.run_dir.dir.name).load())
        volatile = ["seconds", "n_forwarded_tokens"]  # a resumed run re-encodes its run prefix
        pd.testing.assert_frame_equal(resumed.drop(columns=volatile), uninterrupted.drop(columns=volatile))
        assert (job.run_dir.dir / "run_model.ipynb").exists()
