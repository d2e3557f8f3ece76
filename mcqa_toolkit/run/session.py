"""KernelSession: one Jupyter kernel that executes many papermill-parameterised notebooks in turn.

`mcqa run` used to start a kernel per combination, so every run paid the kernel start, the imports (torch,
transformers, pandas) and the model load again. A session pays them once for the whole grid while each
notebook still gets its own executed copy, written by papermill exactly as before (injected parameters cell,
cell timings, error markers, PapermillExecutionError on a failing cell).

Between notebooks the kernel forgets the previous one: its user namespace is cleared except the names the
caller asks to keep (`keep`), its output history is dropped and its execution counter restarts at 1, so an
executed notebook reads as if it had had a kernel of its own. `setup` is code run once in a new kernel
(`mcqa run` creates its BackendCache there, kept as BACKENDS, which every run notebook passes to run_job).
A kernel that died (out of memory, say) is restarted, and set up again, before the next notebook. `env` adds
variables to the kernel's environment (`mcqa run` lends its run-folder locks to its kernel this way, records.lock).
`teardown` is code run in the kernel before it is shut down (`mcqa run --ray` ends its Ray pool's workers there).

The kernel gets OPENBLAS_NUM_THREADS=1 unless the caller's environment sets it: torch already uses every core,
and numpy's OpenBLAS threads, which keep spinning after each small matrix product, then slowed the model's runs
down up to five-fold on 2 cores (the same run notebook took 8 s alone and 56 s inside `mcqa demo`).

The kernel talks over IPC sockets in a private temporary folder: no TCP ports are opened, which is also why
ipykernel no longer warns "Kernel is running over TCP without encryption".
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable

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

# Runs in the kernel before each notebook (silently: no execution count, no history, no output).
_RESET = """\
def _mcqa_reset(keep, cwd):
    import os, sys
    shell = get_ipython()
    kept = {{k: shell.user_ns[k] for k in keep if k in shell.user_ns}}
    if "ipywidgets" in sys.modules:  # progress bars and widgets of the previous notebook
        sys.modules["ipywidgets"].Widget.close_all()
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    shell.reset(new_session=True)  # also drops Out[] and restarts the execution counter at 1
    shell.user_ns.update(kept)
    if cwd:
        os.chdir(cwd)
_mcqa_reset({keep!r}, {cwd!r})
"""


class KernelSession:
    """One kernel for many notebooks: `with KernelSession(keep=("X",), setup="X = 1") as s: s.execute(nb, out, p)`."""

    def __init__(self, kernel_name: str = "python3", cwd: str | Path | None = None, keep: Iterable[str] = (),
                 startup_timeout: int = 60, setup: str = "", env: dict[str, str] | None = None, teardown: str = ""):
        self.kernel_name = kernel_name
        self.teardown = teardown
        self.env = dict(env or {})  # added to the kernel's environment (over the caller's)
        self.cwd = str(cwd) if cwd is not None else None
        self.keep = tuple(keep)
        self.setup = setup
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
            if self.setup:
                self._silent(self.setup, "set up the kernel")
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        """Run `teardown` in a live kernel, stop the client and shut the kernel down (killed if it does not
        stop), remove the socket folder."""
        if self.teardown and self.kc is not None and self.km is not None and run_sync(self.km.is_alive)():
            try:
                self._silent(self.teardown, "tear down the kernel")
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
        self._ensure_alive()
        self._silent(_RESET.format(keep=self.keep, cwd=str(cwd) if cwd is not None else self.cwd), "reset the kernel")

    def _silent(self, code: str, what: str) -> None:
        """Run code in the kernel without output, history or execution count; raise if it fails."""
        reply = run_sync(self.kc.execute_interactive)(code, silent=True, store_history=False,
                                                      timeout=self.startup_timeout, output_hook=lambda msg: None)
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"could not {what}: {reply['content'].get('evalue', '')}")

    def execute(self, notebook: str | Path, output: str | Path, parameters: dict[str, Any] | None = None,
                cwd: str | Path | None = None) -> Any:
        """Execute `notebook` with papermill in this kernel, writing the executed copy to `output`."""
        self.reset(cwd)
        return pm.execute_notebook(str(notebook), str(output), parameters=parameters or {},
                                   kernel_name=self.kernel_name, engine_name=ENGINE, progress_bar=False,
                                   km=self.km, kc=self.kc)


__all__ = ["KernelSession", "ENGINE", "KERNEL_ENV"]
