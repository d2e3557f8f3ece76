"""Work the fault suite runs in child processes, so that a child can be killed for real (SIGKILL, no clean-up
of any kind) or run under a resource limit (RLIMIT_FSIZE: a full disk). A forkserver is started once with
this module preloaded (everything imported and warmed up by one run), then each case is one forked child:
`in_child(target, *args)` -> Result(exitcode, value sent back, seconds).

Kill points: while a child runs, a profile hook counts the events of the package's own code and of pathlib (every
call of one of their functions, and every builtin they call: json.dumps, open, write, fsync, rename, ...), and among
them the I/O events. `count=True` returns how many a whole run has; `kill_at=k` SIGKILLs the child at the k-th
event, `kill_io=j` at the j-th I/O event (between opening a file and writing it, between writing and renaming, ...),
`kill_in=name` at the first call of a function of that name. The same run always has the same events (a forked child
starts from the same warmed-up state), so a kill point is reproducible from its number.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import pathlib
import resource
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet  # noqa: F401  (imported before forking, like everything a run needs)
from lookup_backend import LookupBackend

import mcqa_toolkit
from mcqa_toolkit.backends.cache import RequestCache
from mcqa_toolkit.datasets import load
from mcqa_toolkit.run.jobs import Job
from mcqa_toolkit.run.recipe import BackendCache, run_job

WATCHED = (str(Path(mcqa_toolkit.__file__).parent), pathlib.__file__)
IO_CALLS = {"open", "write", "fsync", "replace", "rename", "ftruncate", "truncate", "pwrite", "unlink", "close",
            "flock", "mkdir"}
_CONTEXT: Any = None


def lookup_job(out_dir: str | Path) -> tuple[Job, BackendCache]:
    """The short run of the kill/resume and full-disk cases: 6 demo items x 2 shuffles, one-shot letters,
    Min-K%, through the lookup-table backend (no model: a run takes a fraction of a second)."""
    items = load("demo", language="pt")
    table = {it.item_id: [math.log(0.6 if o == (it.answer + 1) % it.n_options else 0.4 / (it.n_options - 1))
                          for o in range(it.n_options)] for it in items}
    cache = BackendCache()
    cache.put("lookup", LookupBackend(table))
    return Job("lookup", "demo", {}, "pt", "enem_1shot", Path(out_dir), shuffles=2, limit=6), cache


class _Events:
    """The profile hook: counts the events of the package's code (and of pathlib, through which it writes
    files) and SIGKILLs this process at the chosen one. I/O events (a builtin that opens, writes, syncs,
    truncates, renames, removes or locks a file) are also counted on their own."""

    def __init__(self, kill_at: int | None = None, kill_io: int | None = None, kill_in: str | None = None):
        self.n = self.io = 0
        self.kill_at, self.kill_io, self.kill_in = kill_at, kill_io, kill_in

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event not in ("call", "c_call") or not frame.f_code.co_filename.startswith(WATCHED):
            return
        self.n += 1
        io = event == "c_call" and getattr(arg, "__name__", "") in IO_CALLS
        self.io += io
        if self.n == self.kill_at or (io and self.io == self.kill_io) or (
                self.kill_in and event == "call" and frame.f_code.co_name == self.kill_in):
            os.kill(os.getpid(), signal.SIGKILL)


def _traced(work: Callable[[], Any], kill_at: int | None, kill_io: int | None, kill_in: str | None,
            count: bool) -> Any:
    events = _Events(kill_at, kill_io, kill_in) if kill_at or kill_io or kill_in or count else None
    if events is not None:
        sys.setprofile(events)
    try:
        work()
    finally:
        sys.setprofile(None)
    return (events.n, events.io) if count else None


def run_lookup(out_dir: str, kill_at: int | None = None, kill_io: int | None = None, kill_in: str | None = None,
               count: bool = False, fsize: int | None = None) -> tuple:
    """Run (or resume) the lookup job in `out_dir`: ("ok", (events, I/O events) when counting) or ("error",
    type, message). `fsize` caps the size of any file this process writes (RLIMIT_FSIZE): a full disk."""
    job, cache = lookup_job(out_dir)
    if fsize is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    try:
        n = _traced(lambda: run_job(job, cache, progress=False), kill_at, kill_io, kill_in, count)
    except Exception as e:  # noqa: BLE001 - sent back to the test, which checks what it is
        return ("error", type(e).__name__, str(e))
    return ("ok", n)


def cache_puts(root: str, n: int, kill_at: int | None = None, count: bool = False) -> tuple:
    """Store `n` responses in a request cache at `root` (killed at event `kill_at`)."""
    cache = RequestCache(root)

    def work() -> None:
        for i in range(n):
            cache.put(f"{i:064x}", {"id": i, "choices": [{"text": "x" * (i % 7), "logprobs": None}]})

    return ("ok", _traced(work, kill_at, None, None, count))


def hold_lock(run_dir: str, then: str) -> tuple:
    """Take the run folder's lock and then: 'sigkill' this process while holding it, or 'wait' until killed."""
    from mcqa_toolkit.records.store import RunDir

    lock = RunDir(run_dir).lock()
    lock.acquire()
    Path(run_dir, "held").write_text(str(os.getpid()))
    if then == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(600)
    return ("ok", None)


@dataclass(frozen=True)
class Result:
    exitcode: int
    value: Any
    seconds: float


def _context() -> Any:
    """The forkserver context, its server started with this module preloaded. Python 3.11's forkserver
    ignores the parent's sys.path when preloading (and silently skips a module it cannot import), so the
    server is started with the test folders on PYTHONPATH."""
    global _CONTEXT
    if _CONTEXT is None:
        from multiprocessing import forkserver

        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["faults_children", "faults_warmup"])
        here = Path(__file__).resolve().parent
        before = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join([str(here), str(here.parent), *sys.path])
        try:
            forkserver.ensure_running()
        finally:
            if before is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = before
        _CONTEXT = ctx
    return _CONTEXT


def _call(target: Callable[..., Any], conn: Any, args: tuple, kwargs: dict) -> None:
    conn.send(target(*args, **kwargs))
    conn.close()


def start_child(target: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """(process, receiving end of its pipe) of a forked child running target(*args, **kwargs)."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_call, args=(target, send, args, kwargs), daemon=True)
    proc.start()
    send.close()
    return proc, receive


def in_child(target: Callable[..., Any], *args: Any, timeout: float = 120, **kwargs: Any) -> Result:
    """Run target(*args, **kwargs) in a forked child and wait for it (bounded); a killed child sends nothing."""
    t0 = time.monotonic()
    proc, receive = start_child(target, *args, **kwargs)
    value = None
    if receive.poll(timeout):
        try:
            value = receive.recv()
        except EOFError:  # killed before sending
            pass
    proc.join(timeout)
    if proc.exitcode is None:
        proc.kill()
        proc.join(10)
        raise TimeoutError(f"child {target.__name__}{args} still running after {timeout} s")
    receive.close()
    return Result(proc.exitcode, value, time.monotonic() - t0)


def warm_up() -> None:
    """One full run before any fork (faults_warmup, in the forkserver): every lazy import and cache is then the
    same in every child (so kill points are reproducible) and children start fast."""
    with tempfile.TemporaryDirectory(prefix="mcqa_faults_warm_") as tmp:
        job, cache = lookup_job(Path(tmp) / "run")
        run_job(job, cache, progress=False)
