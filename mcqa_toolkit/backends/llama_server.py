"""A local OpenAI-compatible server for the embedded model: llama-cpp-python (`python -m llama_cpp.server`,
the `server` extra) serving the Gemma-3-270M GGUF on 127.0.0.1, with `--logits_all true` (log-probs of
prompt tokens, needed by echo) and Gemma's chat format. Used by the server tests and the throughput
benchmark. Health is awaited in a bounded loop; the server runs in its own process group and is always
killed on exit (and, on Linux, when the process that started it dies, however it dies), with its log shown
when it fails to start."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

STARTUP_SECONDS = 180


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


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as r:
            return r.status == 200 and bool(json.load(r).get("data"))
    except OSError:
        return False


@contextmanager
def llama_server(log_dir: Path, n_ctx: int = 4096, n_threads: int = 2) -> Iterator[str]:
    """Yield the server's base URL (ending in /v1); the process group is killed on exit."""
    from mcqa_toolkit.backends.hf.loading import embedded_gguf

    gguf = embedded_gguf("gemma-3-270m")
    port = free_port()
    log = open(log_dir / "llama_server.log", "w")
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "gemma-3-270m",
           "--host", "127.0.0.1", "--port", str(port), "--logits_all", "true", "--chat_format", "gemma",
           "--n_ctx", str(n_ctx), "--n_threads", str(n_threads), "--verbose", "false"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _healthy(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (log_dir / "llama_server.log").read_text()[-3000:]
                raise RuntimeError(f"llama-cpp-python server did not start (exit code {proc.poll()}):\n{tail}")
            time.sleep(0.5)
        yield f"{url}/v1"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        log.close()
