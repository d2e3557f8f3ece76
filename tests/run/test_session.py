"""KernelSession (run.session): one kernel executes many notebooks that forget each other (only kept names
survive), numpy gets one BLAS thread unless the caller says otherwise, a dead kernel is replaced before the next
notebook, and the kernel talks over IPC (no "running over TCP without encryption" warning)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from papermill.exceptions import PapermillExecutionError
from paths import REPO


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


@pytest.mark.notebooks
def test_the_kernel_is_set_up_and_asked_by_calling_importable_code(tmp_path):
    """setup keeps an object made by an importable function; calls return JSON; an exception there is one
    KernelCallError naming it; the call leaves no name behind; teardown calls run before shutdown; a target that is
    not a function or a kept object's method is refused before anything is sent."""
    from mcqa_toolkit.run.session import KernelCall, KernelCallError, KernelSession

    marker = tmp_path / "torn_down"
    nb = _notebook(tmp_path / "nb.ipynb", "print(sorted(k for k in globals() if not k.startswith('_') and "
                                          "k not in ('In', 'Out', 'exit', 'quit', 'get_ipython', 'open', 'X')))")
    setup = (KernelCall("collections:Counter", ("abca",), into="KEPT"),)
    teardown = (KernelCall("os:mkdir", (str(marker),)),)
    with KernelSession(cwd=tmp_path, keep=("KEPT",), setup=setup, teardown=teardown) as session:
        assert session.call("KEPT.most_common", 1) == [["a", 2]]
        assert session.call("os.path:join", "a", "b") == "a/b"
        with pytest.raises(KernelCallError, match="KEPT.pop: KeyError: 'zzz'") as err:
            session.call("KEPT.pop", "zzz")
        assert err.value.ename == "KeyError"
        session.execute(nb, tmp_path / "out.ipynb", {"X": 1})
        with pytest.raises(ValueError, match="not a call target"):
            session.call("print('x'); KEPT.clear")
    assert _outputs(tmp_path / "out.ipynb") == ["['KEPT']\n"] and marker.exists()
