"""A local OpenAI-compatible server for the embedded model: llama-cpp-python (`python -m llama_cpp.server`, the
`server` extra) serving the Gemma-3-270M GGUF on 127.0.0.1, with `--logits_all true` (log-probs of prompt tokens,
needed by echo) and Gemma's chat format. Used by the server tests, the fault suite (`LlamaServer`: killed mid-run
and restarted on the same port) and the throughput benchmark. Health is awaited in a bounded loop; the server
runs in its own process group and is always killed on exit (and, on Linux, when the process that started it dies,
however it dies), with its log shown when it fails to start."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STARTUP_SECONDS = 180
PORT_TRIES = 3  # ports a first start tries when another process takes the picked one before the server binds it


def _die_with_parent() -> None:
    """In the server process: get SIGTERM when the process that started it dies, even by SIGKILL (Linux)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_taken(log: str) -> bool:
    """Whether a server's start-up log says its port was in use (taken by another process after free_port())."""
    return "address already in use" in log.lower()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as r:
            return r.status == 200 and bool(json.load(r).get("data"))
    except OSError:
        return False


class LlamaServer:
    """The server as a process this program controls: `start()` (again after a crash: same port, same URL),
    `kill()` (SIGKILL, as a crash would: the fault tests), `stop()`. `url` ends in /v1."""

    def __init__(self, log_dir: Path, n_ctx: int = 4096, n_threads: int = 2):
        self.log_path = Path(log_dir) / "llama_server.log"
        self.n_ctx, self.n_threads = n_ctx, n_threads
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.served = False  # answered once: its URL is out, so a restart keeps the port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start the server and wait (bounded) until it answers; its log is shown when it fails to start. The port
        is picked before the server binds it: if another process takes it in between, a first start tries a new
        one (PORT_TRIES in all); a restart keeps its port, the URL its clients hold."""
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"the llama-cpp-python server on port {self.port} is already running")
        tries = 1 if self.served else PORT_TRIES
        for attempt in range(tries):
            failed = self._start_once()
            if failed is None:
                self.served = True
                return
            code, log = failed
            if attempt + 1 == tries or not port_taken(log):
                raise RuntimeError(f"llama-cpp-python server did not start (exit code {code}):\n{log[-3000:]}")
            self.port = free_port()

    def _start_once(self) -> tuple[int | None, str] | None:
        """One start on self.port: None once it answers, else (exit code, this start's log) with it stopped."""
        from mcqa_toolkit.backends.hf.loading import embedded_gguf

        gguf = embedded_gguf("gemma-3-270m")
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "gemma-3-270m",
               "--host", "127.0.0.1", "--port", str(self.port), "--logits_all", "true", "--chat_format", "gemma",
               "--n_ctx", str(self.n_ctx), "--n_threads", str(self.n_threads), "--verbose", "false"]
        with open(self.log_path, "a") as log:
            offset = log.tell()
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _healthy(base):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                code = self.proc.poll()
                self.stop()
                with open(self.log_path, errors="replace") as log:
                    log.seek(offset)
                    return code, log.read()
            time.sleep(0.5)
        return None

    def kill(self) -> None:
        """SIGKILL the server's process group (a crash: no clean shutdown) and reap it."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=15)

    def stop(self) -> None:
        """SIGTERM the process group (SIGKILL if it does not stop within 15 s)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            self.kill()
        self.proc = None


@contextmanager
def llama_server(log_dir: Path, n_ctx: int = 4096, n_threads: int = 2) -> Iterator[str]:
    """Yield the server's base URL (ending in /v1); the process group is killed on exit."""
    with LlamaServer(log_dir, n_ctx, n_threads) as server:
        yield server.url
