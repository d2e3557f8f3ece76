"""KernelSession: one Jupyter kernel that executes many papermill-parameterised notebooks in turn, and the control
requests that pass between them.

A session pays the kernel start, the imports (torch, transformers, pandas) and the model loads once for many
notebooks, while each notebook still gets its own executed copy, written by papermill (injected parameters cell,
cell timings, error markers, PapermillExecutionError on a failing cell).

What reaches the kernel is the notebooks' cells (papermill's injected parameters cell among them) and control
requests. A control request is a Jupyter comm message to a named target holding JSON, a verb and its arguments;
the target is served in the kernel by importable code (`serve`), registered by an IPython extension that the kernel
loads by module name when it starts (`extensions`; this module is always one of them: its target resets the kernel
between notebooks). The kernel answers a request with an acknowledgement only: done, or ControlError naming the
exception; whatever a request produces, it leaves in files. No Python source is built for the kernel and nothing is
parsed back from it.

Between notebooks the kernel forgets the previous one (session_reset): its user namespace is cleared except the
names the caller asks to keep (`keep`), its widgets and figures are closed, its output history is dropped and its
execution counter restarts at 1, so an executed notebook reads as if it had had a kernel of its own.

`setup`: control requests made whenever a kernel starts; `teardown`: before it is shut down. A kernel that died
(out of memory, say) is restarted, and set up again, before the next request or notebook; a request during which it
dies is a ControlError at once. `env` adds variables to the kernel's environment.

The kernel gets OPENBLAS_NUM_THREADS=1 unless the caller's environment sets it: torch already uses every core, and
numpy's OpenBLAS threads, which keep spinning after each small matrix product, slow the model's runs down up to
five-fold on 2 cores (the same run notebook took 8 s alone and 56 s inside `mcqa demo`).

The kernel talks over IPC sockets in a private temporary folder: no TCP ports are opened (and ipykernel has no
reason to warn "Kernel is running over TCP without encryption").
"""
from __future__ import annotations

import logging
import os
import queue
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import papermill as pm
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, papermill_engines

ENGINE = "mcqa_kernel_session"
KERNEL_ENV = {"OPENBLAS_NUM_THREADS": "1"}  # defaults for the kernel's environment (see the module docstring)
TARGET = "mcqa_toolkit.session"  # this module's control target in the kernel (verb "reset")
_LOG = logging.getLogger("papermill")
_POLL_SECONDS = 1.0  # how often a waiting request checks that the kernel is alive


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


class ControlError(RuntimeError):
    """A control request failed in the kernel (`ename`: the exception's class name there, `evalue`: its message),
    or the kernel died during it (ename "DeadKernel")."""

    def __init__(self, what: str, ename: str, evalue: str):
        self.ename, self.evalue = ename, evalue
        super().__init__(f"{what}: {ename}: {evalue}")


@dataclass(frozen=True)
class Control:
    """One control request: `verb` with the JSON arguments `args`, to the kernel's handler of `target` (serve)."""

    target: str
    verb: str
    args: Mapping[str, Any] = field(default_factory=dict)


def serve(ip: Any, target: str, verbs: Mapping[str, Callable[..., None]]) -> None:
    """In the kernel (an extension's load_ipython_extension calls it): answer the control requests to `target`, each
    calling verbs[verb](**args), with an acknowledgement: {"ok": true}, or the exception's class name and message."""
    def handle(comm: Any, msg: dict[str, Any]) -> None:
        args = dict(msg["content"].get("data") or {})
        verb = args.pop("verb", None)
        try:
            if verb not in verbs:
                raise ValueError(f"{target} has no verb {verb!r} (it has {sorted(verbs)})")
            verbs[verb](**args)
        except Exception as e:  # the caller reports it; the kernel goes on serving
            comm.close(data={"ename": type(e).__name__, "evalue": str(e)})
        else:
            comm.close(data={"ok": True})

    ip.kernel.comm_manager.register_target(target, handle)


def session_reset(keep: Sequence[str], cwd: str | None) -> None:
    """In the kernel, before each notebook: forget the previous one except the `keep` names (its widgets and figures
    closed, Out[] dropped, the execution counter back at 1) and move to `cwd`."""
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


def load_ipython_extension(ip: Any) -> None:
    """Loaded by every session's kernel when it starts: this module's control target."""
    serve(ip, TARGET, {"reset": session_reset})


class KernelSession:
    """One kernel for many notebooks: `with KernelSession(keep=("X",)) as s: s.execute(nb, out, parameters)`."""

    def __init__(self, kernel_name: str = "python3", cwd: str | Path | None = None, keep: Iterable[str] = (),
                 startup_timeout: int = 60, setup: Sequence[Control] = (), env: dict[str, str] | None = None,
                 teardown: Sequence[Control] = (), extensions: Sequence[str] = ()):
        self.kernel_name = kernel_name
        self.extensions = (__name__, *extensions)  # modules the kernel loads at start (load_ipython_extension)
        self.teardown = tuple(teardown)
        self.env = dict(env or {})  # added to the kernel's environment (over the caller's)
        self.cwd = str(cwd) if cwd is not None else None
        self.keep = tuple(keep)
        self.setup = tuple(setup)
        self.startup_timeout = startup_timeout
        self.km: AsyncKernelManager | None = None
        self.kc: Any = None
        self._dir: str | None = None

    def __enter__(self) -> KernelSession:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> None:
        """Start the kernel (IPC sockets in a private folder, the extensions loaded), connect a client, set it up."""
        self._dir = tempfile.mkdtemp(prefix="mcqa_kernel_")
        self.km = AsyncKernelManager(kernel_name=self.kernel_name, transport="ipc",
                                     connection_file=str(Path(self._dir) / "kernel.json"))
        arguments = ["--HistoryManager.hist_file=:memory:", *(f"--IPKernelApp.extensions={m}" for m in self.extensions)]
        run_sync(self.km.start_kernel)(cwd=self.cwd, env={**KERNEL_ENV, **os.environ, **self.env},
                                       extra_arguments=arguments)
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            run_sync(self.kc.wait_for_ready)(timeout=self.startup_timeout)
            for request in self.setup:
                self._request(request, self.startup_timeout)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        """Make the `teardown` requests in a live kernel, stop the client and shut the kernel down (killed if it
        does not stop), remove the socket folder."""
        if self.teardown and self.kc is not None and self.km is not None and run_sync(self.km.is_alive)():
            for request in self.teardown:
                try:
                    self._request(request, self.startup_timeout)
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

    def control(self, target: str, verb: str, timeout: float | None = None, **args: Any) -> None:
        """Ask the kernel's handler of `target` to do `verb` with the JSON `args` and wait until it has (ControlError
        when it failed); a kernel that died is restarted (and set up) first. `timeout`: seconds to wait (None: as
        long as the kernel lives)."""
        self._ensure_alive()
        self._request(Control(target, verb, args), timeout)

    def _request(self, request: Control, timeout: float | None) -> None:
        """Send `request` (a comm_open holding its verb and arguments) and wait for its acknowledgement (the comm's
        close) while the kernel lives."""
        what, comm_id = f"{request.target} {request.verb}", uuid.uuid4().hex
        km = self.km
        if km is None:
            raise ControlError(what, "DeadKernel", "no kernel is running (start() it first)")
        data = {**request.args, "verb": request.verb}
        self.kc.shell_channel.send(self.kc.session.msg("comm_open", {"comm_id": comm_id, "target_name": request.target,
                                                                     "data": data}))
        waited = 0.0
        while True:
            try:
                msg = run_sync(self.kc.get_iopub_msg)(timeout=_POLL_SECONDS)
            except queue.Empty:
                waited += _POLL_SECONDS
                if not run_sync(km.is_alive)():
                    raise ControlError(what, "DeadKernel", "the kernel died (out of memory?)") from None
                if timeout is not None and waited >= timeout:
                    raise ControlError(what, "TimeoutError", f"no answer in {timeout:.0f} s") from None
                continue
            if msg["msg_type"] == "comm_close" and msg["content"].get("comm_id") == comm_id:
                break
        answer = msg["content"].get("data") or {}
        if not answer.get("ok"):
            raise ControlError(what, answer.get("ename", "NoHandler"), answer.get(
                "evalue", f"nothing in kernel {self.kernel_name!r} serves {request.target!r} (its extension did "
                          "not load: is mcqa_toolkit importable there?)"))

    def reset(self, cwd: str | Path | None = None) -> None:
        """Forget the previous notebook (except `keep`) and start counting cells at 1; ControlError if that fails."""
        self.control(TARGET, "reset", keep=list(self.keep), cwd=str(cwd) if cwd is not None else self.cwd)

    def execute(self, notebook: str | Path, output: str | Path, parameters: dict[str, Any] | None = None,
                cwd: str | Path | None = None) -> Any:
        """Execute `notebook` with papermill in this kernel, writing the executed copy to `output`."""
        self.reset(cwd)
        return pm.execute_notebook(str(notebook), str(output), parameters=parameters or {},
                                   kernel_name=self.kernel_name, engine_name=ENGINE, progress_bar=False,
                                   km=self.km, kc=self.kc)


__all__ = ["KernelSession", "Control", "ControlError", "serve", "session_reset", "ENGINE", "KERNEL_ENV", "TARGET"]
