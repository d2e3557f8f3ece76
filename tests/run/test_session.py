"""KernelSession (run.session): one kernel executes many notebooks that forget each other (only kept names
survive), numpy gets one BLAS thread unless the caller says otherwise, a dead kernel is replaced before the next
notebook, the kernel talks over IPC (no "running over TCP without encryption" warning), and between notebooks it
gets JSON control requests, never source."""
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

    nb = _notebook(tmp_path / "nb.ipynb", "import os\nprint(sorted(k for k in ('leftover', 'backend') if k in "
                   "globals()), os.getcwd() == " + repr(str(tmp_path)) + ")\nleftover = backend = X",
                   "print(os.getpid())")
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
        with pytest.raises(RuntimeError):  # nbclient's DeadKernelError
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


_PROBE = """from mcqa_toolkit.run.session import serve


def load_ipython_extension(ip):
    def keep(value):
        ip.user_ns["KEPT"] = value

    def fail():
        raise KeyError("zzz")

    def write(path, text):
        open(path, "w").write(text)

    serve(ip, "probe", {"keep": keep, "fail": fail, "write": write})
"""


@pytest.mark.notebooks
def test_the_kernel_gets_notebook_cells_and_json_control_requests_never_generated_source(tmp_path):
    """Control requests reach a handler that an extension (loaded by module name at start) registered: set up at
    start, torn down before shutdown, JSON arguments, an exception there one ControlError naming it, an unknown verb
    or target refused; every execute request the kernel gets is a cell of an executed notebook (papermill's injected
    parameters cell among them): no source is built for it."""
    from mcqa_toolkit.run.session import Control, ControlError, KernelSession

    (tmp_path / "probe_ext.py").write_text(_PROBE)
    marker = tmp_path / "torn_down"
    nb = _notebook(tmp_path / "nb.ipynb", "print(KEPT, X)")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO), os.environ.get("PYTHONPATH", "")])}
    setup, teardown = (Control("probe", "keep", {"value": [1, 2]}),), (Control("probe", "write", {"path": str(marker),
                                                                                                  "text": "bye"}),)
    sent: list[dict] = []
    with KernelSession(cwd=tmp_path, keep=("KEPT",), setup=setup, teardown=teardown, env=env,
                       extensions=("probe_ext",)) as session:
        send = session.kc.shell_channel.send
        session.kc.shell_channel.send = lambda msg: sent.append(msg) or send(msg)
        session.execute(nb, tmp_path / "a.ipynb", {"X": 1})
        session.control("probe", "keep", value={"a": [3]})
        session.execute(nb, tmp_path / "b.ipynb", {"X": 2})
        with pytest.raises(ControlError, match="probe fail: KeyError: 'zzz'") as err:
            session.control("probe", "fail")
        assert err.value.ename == "KeyError"
        with pytest.raises(ControlError, match="probe nope: ValueError: probe has no verb 'nope'"):
            session.control("probe", "nope")
        with pytest.raises(ControlError, match="nothing in kernel 'python3' serves 'elsewhere'"):
            session.control("elsewhere", "keep", value=1)
    assert _outputs(tmp_path / "a.ipynb") == ["[1, 2] 1\n"] and _outputs(tmp_path / "b.ipynb") == ["{'a': [3]} 2\n"]
    assert marker.read_text() == "bye"
    cells = {c.source for name in ("a", "b") for c in nbformat.read(tmp_path / f"{name}.ipynb", 4).cells
             if c.cell_type == "code"}
    executed = [m["content"]["code"] for m in sent if m["header"]["msg_type"] == "execute_request"]
    assert len(executed) == 6 and set(executed) <= cells   # 3 cells x 2 notebooks, each a notebook's own cell
    controls = [m["content"] for m in sent if m["header"]["msg_type"] == "comm_open"]
    assert {m["header"]["msg_type"] for m in sent} == {"execute_request", "comm_open", "kernel_info_request"}
    assert [(c["target_name"], c["data"]["verb"]) for c in controls] == [
        ("mcqa_toolkit.session", "reset"), ("probe", "keep"), ("mcqa_toolkit.session", "reset"), ("probe", "fail"),
        ("probe", "nope"), ("elsewhere", "keep"), ("probe", "write")]   # the last one: teardown
    assert json.loads(json.dumps(controls)) == controls   # plain JSON
