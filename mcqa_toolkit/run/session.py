"""KernelSession: one Jupyter kernel that executes many papermill-parameterised notebooks in turn.

`mcqa run` used to start a kernel per combination, so every run paid the kernel start, the imports (torch,
transformers, pandas) and the model load again. A session pays them once for the whole grid while each
notebook still gets its own executed copy, written by papermill exactly as before (injected parameters cell,
cell timings, error markers, PapermillExecutionError on a failing cell).

Between notebooks the kernel forgets the previous one: its user namespace is cleared except the names the
caller asks to keep (`keep`), its output history is dropped and its execution counter restarts at 1, so an
executed notebook reads as if it had had a kernel of its own (session_reset, called in the kernel).

The caller talks to the kernel by calling importable code there, never by sending source: `call(target, *args)`
calls a function ("package.module:function") or a method of an object the kernel keeps ("NAME.method") with
JSON arguments and returns its JSON result (an exception there is KernelCallError, naming it); `into=NAME` keeps
the result in the kernel instead. `setup` is such calls made whenever a kernel starts (`mcqa run` creates its
run.kernel.KernelRuns there, kept as RUNS), `teardown` before it is shut down (the Ray pool's workers end there).
A kernel that died (out of memory, say) is restarted, and set up again, before the next call or notebook; a call
during which it dies is a KernelCallError at once. `env` adds variables to the kernel's environment.

The kernel gets OPENBLAS_NUM_THREADS=1 unless the caller's environment sets it: torch already uses every core,
and numpy's OpenBLAS threads, which keep spinning after each small matrix product, then slowed the model's runs
down up to five-fold on 2 cores (the same run notebook took 8 s alone and 56 s inside `mcqa demo`).

The kernel talks over IPC sockets in a private temporary folder: no TCP ports are opened, which is also why
ipykernel no longer warns "Kernel is running over TCP without encryption".
"""
from __future__ import annotations

import ast
import json
import logging
import os
import queue
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import papermill as pm
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, papermill_engines

ENGINE = "mcqa_kernel_session"
KERNEL_ENV = {"OPENBLAS_NUM_THREADS": "1"}  # defaults for the kernel's environment (see the module docstring)
_LOG = logging.getLogger("papermill")


class _SessionEngine(NBClientEngine):
    """papermill's nbclient engine, executing in the session's kernel through the session's client."""

    @classmethod
    def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, log_output: bool = False,
                                 stdout_file: Any = None, stderr_file: Any = None, start_timeout: int = 60,
                                 execution_timeout: int | None = None, km: Any = None, kc: Any = None,
                                 **kwargs: Any) -> Any:
        kwargs.pop("input_path", None)
        client = PapermillNotebookClient(nb_man, km=km, kernel_name=kernel_name, timeout=execution_timeout,
                                         startup_timeout=start_timeout, log=_LOG, log_output=log_output,
                                         stdout_file=stdout_file, stderr_file=stderr_file, **kwargs)
        client.kc = kc  # a client that does not own `km` neither starts nor shuts the kernel down
        return client.execute()


papermill_engines.register(ENGINE, _SessionEngine)

_TARGET = re.compile(r"^(?:[A-Za-z_][\w.]*:[A-Za-z_][\w.]*|[A-Za-z_]\w*\.[A-Za-z_][\w.]*)$")
_POLL_SECONDS = 1.0  # how often a waiting call checks that the kernel is alive


class KernelCallError(RuntimeError):
    """A call into the kernel raised (`ename`: the exception's class name there, `evalue`: its message), or the
    kernel died during it (ename "DeadKernel")."""

    def __init__(self, what: str, ename: str, evalue: str):
        self.ename, self.evalue = ename, evalue
        super().__init__(f"{what}: {ename}: {evalue}")


@dataclass(frozen=True)
class KernelCall:
    """One call into the kernel (see the module docstring): `target(*args)`, its result kept as `into` if given."""

    target: str
    args: tuple[Any, ...] = ()
    into: str | None = None

    def code(self) -> str:
        """The one statement that makes the call in the kernel (the result goes to `_mcqa_result`)."""
        if not _TARGET.match(self.target) or (self.into is not None and not self.into.isidentifier()):
            raise ValueError(f"not a call target: {self.target!r} (package.module:function or NAME.method)")
        if ":" in self.target:
            module, attr = self.target.split(":")
            function = f"__import__('importlib').import_module({module!r}).{attr}"
        else:
            function = self.target
        text = json.dumps(list(self.args), default=str)
        code = f"_mcqa_result = {function}(*__import__('json').loads({text!r}))"
        return code + (f"\n{self.into} = _mcqa_result\n_mcqa_result = None" if self.into else "")


def session_reset(keep: Sequence[str], cwd: str | None) -> None:
    """Called in the kernel before each notebook: forget the previous one except the `keep` names (its widgets and
    figures closed, Out[] dropped, the execution counter back at 1) and move to `cwd`."""
    import sys

    from IPython import get_ipython

    shell = get_ipython()
    kept = {k: shell.user_ns[k] for k in keep if k in shell.user_ns}
    if "ipywidgets" in sys.modules:  # progress bars and widgets of the previous notebook
        sys.modules["ipywidgets"].Widget.close_all()
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    shell.reset(new_session=True)  # also drops Out[] and restarts the execution counter at 1
    shell.user_ns.update(kept)
    if cwd:
        os.chdir(cwd)


class KernelSession:
    """One kernel for many notebooks: `with KernelSession(keep=("X",), setup="X = 1") as s: s.execute(nb, out, p)`."""

    def __init__(self, kernel_name: str = "python3", cwd: str | Path | None = None, keep: Iterable[str] = (),
                 startup_timeout: int = 60, setup: Sequence[KernelCall] = (), env: dict[str, str] | None = None,
                 teardown: Sequence[KernelCall] = ()):
        self.kernel_name = kernel_name
        self.teardown = tuple(teardown)
        self.env = dict(env or {})  # added to the kernel's environment (over the caller's)
        self.cwd = str(cwd) if cwd is not None else None
        self.keep = tuple(keep)
        self.setup = tuple(setup)
        self.startup_timeout = startup_timeout
        self.km: AsyncKernelManager | None = None
        self.kc: Any = None
        self._dir: str | None = None

    def __enter__(self) -> "KernelSession":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> None:
        """Start the kernel (IPC sockets in a private folder) and connect a client."""
        self._dir = tempfile.mkdtemp(prefix="mcqa_kernel_")
        self.km = AsyncKernelManager(kernel_name=self.kernel_name, transport="ipc",
                                     connection_file=str(Path(self._dir) / "kernel.json"))
        run_sync(self.km.start_kernel)(cwd=self.cwd, env={**KERNEL_ENV, **os.environ, **self.env},
                                       extra_arguments=["--HistoryManager.hist_file=:memory:"])
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            run_sync(self.kc.wait_for_ready)(timeout=self.startup_timeout)
            for call in self.setup:
                self._request(call, "set up the kernel", self.startup_timeout)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        """Run `teardown` in a live kernel, stop the client and shut the kernel down (killed if it does not
        stop), remove the socket folder."""
        if self.teardown and self.kc is not None and self.km is not None and run_sync(self.km.is_alive)():
            for call in self.teardown:
                try:
                    self._request(call, "tear down the kernel", self.startup_timeout)
                except Exception as e:  # shutting down goes on; what failed is said
                    _LOG.warning("%s", e)
        if self.kc is not None:
            self.kc.stop_channels()
            self.kc = None
        if self.km is not None:
            try:
                if run_sync(self.km.is_alive)():
                    run_sync(self.km.shutdown_kernel)(now=False)
            finally:
                run_sync(self.km.cleanup_resources)()
                self.km = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _ensure_alive(self) -> None:
        if self.km is None:
            self.start()
        elif not run_sync(self.km.is_alive)():
            _LOG.warning("the kernel died; starting a new one")
            self.close()
            self.start()

    def reset(self, cwd: str | Path | None = None) -> None:
        """Forget the previous notebook (except `keep`) and start counting cells at 1; raise if that fails."""
        self.call("mcqa_toolkit.run.session:session_reset", list(self.keep),
                  str(cwd) if cwd is not None else self.cwd)

    def call(self, target: str, *args: Any, into: str | None = None, timeout: float | None = None) -> Any:
        """Call `target(*args)` in the kernel (see the module docstring) and return its JSON result (None with
        `into`); a kernel that died is restarted (and set up) first. `timeout`: seconds to wait (None: as long as
        the kernel lives)."""
        self._ensure_alive()
        return self._request(KernelCall(target, tuple(args), into), target, timeout)

    def _request(self, call: KernelCall, what: str, timeout: float | None) -> Any:
        """Make `call` silently (no output, history or execution count) and wait for its reply while the kernel
        lives: its JSON result, or KernelCallError."""
        result = "__import__('json').dumps(globals().pop('_mcqa_result', None), default=str)"  # leaves no name
        msg_id = self.kc.execute(call.code(), silent=True, store_history=False, user_expressions={"r": result})
        waited = 0.0
        while True:
            try:
                reply = run_sync(self.kc.get_shell_msg)(timeout=_POLL_SECONDS)
            except queue.Empty:
                waited += _POLL_SECONDS
                if not run_sync(self.km.is_alive)():
                    raise KernelCallError(what, "DeadKernel", "the kernel died (out of memory?)") from None
                if timeout is not None and waited >= timeout:
                    raise KernelCallError(what, "TimeoutError", f"no reply in {timeout:.0f} s") from None
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        content = reply["content"]
        if content["status"] != "ok":
            raise KernelCallError(what, content.get("ename", "Error"), content.get("evalue", ""))
        value = content["user_expressions"]["r"]
        if value.get("status") != "ok":
            raise KernelCallError(what, value.get("ename", "Error"), value.get("evalue", ""))
        return json.loads(ast.literal_eval(value["data"]["text/plain"]))

    def execute(self, notebook: str | Path, output: str | Path, parameters: dict[str, Any] | None = None,
                cwd: str | Path | None = None) -> Any:
        """Execute `notebook` with papermill in this kernel, writing the executed copy to `output`."""
        self.reset(cwd)
        return pm.execute_notebook(str(notebook), str(output), parameters=parameters or {},
                                   kernel_name=self.kernel_name, engine_name=ENGINE, progress_bar=False,
                                   km=self.km, kc=self.kc)


__all__ = ["KernelSession", "KernelCall", "KernelCallError", "session_reset", "ENGINE", "KERNEL_ENV"]
