"""One kernel for a whole grid (run.session, run.grid): notebooks forget each other, the model is loaded once and
renewed per run, records are exactly those of a fresh load, a killed `mcqa run` resumes, the cheapest runs go
first, and the kernel talks over IPC (no "running over TCP without encryption" warning)."""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml
from papermill.exceptions import PapermillExecutionError
from paths import REPO

from mcqa_toolkit import cli
from mcqa_toolkit.backends import backend_entry
from mcqa_toolkit.resources import notebooks_dir
from mcqa_toolkit.run import grid, jobs
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.run.recipe import BackendCache, run_job
from mcqa_toolkit.records.state import RunState, run_state
from mcqa_toolkit.records.store import RunDir


def _notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("X = 0  # papermill overrides this")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params] + [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


def _outputs(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [o.get("text") or o.get("data", {}).get("text/plain", "") for c in nb.cells if c.cell_type == "code"
            for o in c.outputs]


@pytest.mark.notebooks
def test_session_kernel_defaults_numpy_to_one_blas_thread(tmp_path, monkeypatch):
    """torch owns the cores; spinning OpenBLAS threads slowed runs inside `mcqa demo` down (run.session)."""
    from mcqa_toolkit.run.session import KernelSession

    nb = _notebook(tmp_path / "env.ipynb", "import os\nprint(os.environ.get('OPENBLAS_NUM_THREADS'))")
    seen = []
    for value in (None, "2"):  # unset: the session's default; set by the caller: kept
        if value is None:
            monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
        else:
            monkeypatch.setenv("OPENBLAS_NUM_THREADS", value)
        with KernelSession(cwd=tmp_path) as session:
            session.execute(nb, tmp_path / "out.ipynb")
        seen.append(_outputs(tmp_path / "out.ipynb")[0])
    assert seen == ["1\n", "2\n"]


@pytest.mark.notebooks
def test_session_runs_notebooks_in_one_kernel_that_forgets(tmp_path):
    from mcqa_toolkit.run.session import KernelSession

    nb = _notebook(tmp_path / "nb.ipynb", "import os\nprint(sorted(k for k in ('leftover', 'backend') if k in globals()),"
                   " os.getcwd() == " + repr(str(tmp_path)) + ")\nleftover = backend = X", "print(os.getpid())")
    failing = _notebook(tmp_path / "fail.ipynb", "raise RuntimeError('boom ' + str(X))")
    with KernelSession(cwd=tmp_path, keep=("backend",)) as session:
        assert session.km.transport == "ipc"
        assert json.loads(Path(session.km.connection_file).read_text())["transport"] == "ipc"
        session.execute(nb, tmp_path / "a.ipynb", {"X": 1})
        with pytest.raises(PapermillExecutionError, match="boom 2"):
            session.execute(failing, tmp_path / "b.ipynb", {"X": 2})
        session.execute(nb, tmp_path / "c.ipynb", {"X": 3})
    first, third = _outputs(tmp_path / "a.ipynb"), _outputs(tmp_path / "c.ipynb")
    assert first[0] == "[] True\n"  # a fresh namespace, in the notebook's folder
    assert third[0] == "['backend'] True\n"  # only the kept name survives the previous notebooks
    assert first[1] == third[1]  # the same kernel process
    counts = [c.execution_count for c in nbformat.read(tmp_path / "c.ipynb", 4).cells if c.cell_type == "code"]
    assert counts == [1, 2, 3, 4]  # numbered as in a kernel of its own (parameters, injected parameters, cells)
    assert "papermill" in nbformat.read(tmp_path / "c.ipynb", 4).metadata
    assert session.km is None and session.kc is None  # shut down on exit


@pytest.mark.notebooks
def test_a_dead_kernel_is_replaced_before_the_next_notebook(tmp_path):
    from mcqa_toolkit.run.session import KernelSession

    dies = _notebook(tmp_path / "dies.ipynb", "import os\nos._exit(1)")
    nb = _notebook(tmp_path / "nb.ipynb", "print(X)")
    with KernelSession(cwd=tmp_path) as session:
        with pytest.raises(Exception):
            session.execute(dies, tmp_path / "a.ipynb", {"X": 1})
        session.execute(nb, tmp_path / "b.ipynb", {"X": 2})
    assert _outputs(tmp_path / "b.ipynb") == ["2\n"]


@pytest.mark.notebooks
def test_no_tcp_warning_from_the_kernel(tmp_path):
    nb = _notebook(tmp_path / "nb.ipynb", "print(X)")
    code = ("from mcqa_toolkit.run.session import KernelSession\n"
            f"with KernelSession() as s:\n    s.execute({str(nb)!r}, {str(tmp_path / 'o.ipynb')!r}, {{'X': 5}})\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])})
    assert done.returncode == 0, done.stderr
    assert _outputs(tmp_path / "o.ipynb") == ["5\n"]
    assert "without encryption" not in done.stderr + done.stdout


def test_backend_cache_loads_once_renews_per_run_and_releases_the_rest(tiny_model_dir):
    cache = BackendCache()
    entry = backend_entry(str(tiny_model_dir))
    (first,) = cache.for_run([entry])
    same, judge = cache.for_run([entry, backend_entry({"model": str(tiny_model_dir)})])  # equal entries: one object
    assert same is judge and same is not first and same.lm is first.lm and same.engine is not first.engine
    (other,) = cache.for_run([backend_entry(str(tiny_model_dir), dtype="bfloat16")])  # another entry: loaded
    assert other.lm is not first.lm and len(cache) == 1  # and the float32 model released


def test_records_of_a_renewed_backend_equal_a_fresh_load(tiny_model_dir, tmp_path):
    """What `mcqa run` does (one load, renewed per run, after other runs) vs a load per run."""
    plan = ["enem_1shot", "S5", {"base": "S2", "max_new_tokens": 3}]
    cache = BackendCache()
    for st in plan:
        name = st if isinstance(st, str) else "S2"
        job = jobs.Job(str(tiny_model_dir), "demo", {}, "pt", st, tmp_path / "shared" / name, shuffles=2, limit=4,
                       min_k=False)
        reused = run_job(job, cache, progress=False).records
        fresh = run_job(dataclasses.replace(job, out_dir=tmp_path / "fresh" / name), progress=False).records
        assert_same_records(reused, fresh, ignore=["run_id"])
        usage = [json.loads((tmp_path / d / name / "provenance.json").read_text())["usage"] for d in ("shared", "fresh")]
        assert {k: v for k, v in usage[0].items() if k != "seconds"} == \
               {k: v for k, v in usage[1].items() if k != "seconds"}


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
    complete = lambda j: run_state(j.run_dir, {"job": j.identity()}) is RunState.COMPLETE  # noqa: E731
    assert not all(complete(j) for j in killed), "the grid finished before the kill; nothing was tested"
    assert grid.run_params(params, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path) == 0
    assert all(complete(j) for j in killed)
    clean = _grid(tmp_path, tiny_model_dir, "clean")
    assert grid.run_params(clean, notebooks_dir() / cli.RUN_NOTEBOOK, tmp_path) == 0
    for job in killed:
        resumed, uninterrupted = RunDir(job.out_dir).load(), RunDir(tmp_path / "clean" / job.out_dir.name).load()
        volatile = ["seconds", "n_forwarded_tokens"]  # a resumed run re-encodes its run prefix
        pd.testing.assert_frame_equal(resumed.drop(columns=volatile), uninterrupted.drop(columns=volatile))
        assert (job.out_dir / "run_model.ipynb").exists()
