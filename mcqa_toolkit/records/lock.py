"""One writer per run folder: `RunLock`, an exclusive lock on `<run folder>/run.lock` held for the whole run.

Without it, two processes appending to one records.jsonl duplicate records (two `mcqa run` a second apart keep
234 records for 132, and the accuracy is computed over them). run.recipe.run_job and run.runner.run hold this
lock while they write a run folder; a second writer stops at once with RunLocked, one sentence naming the
holder (pid, host, when it started), and `mcqa run` reports that combination as running elsewhere.

Why `fcntl.flock` and not the `filelock` package: the lock file must say who holds it, and flock(2) is released
by the kernel when its holder dies, however it dies (SIGKILL, out of memory, a lost SSH session), so a stale lock
is simply a lock nobody holds: it is taken over without any pid or age heuristics, and the holder record it
still carries is reported as stale. `filelock` wraps the same flock(2) on Linux, but its file content is its
own business (older releases opened it with O_TRUNC, wiping what a holder wrote), it is only a transitive
dependency here, and it would add nothing this module needs. flock is POSIX (Linux, macOS); where the platform
or the filesystem cannot lock, the run goes on unlocked with a warning (concurrent writers are then not detected).

The lock is re-entrant for the thread that holds it. It is held by the process that writes the folder, and only
by it: under `mcqa run` that is the grid's kernel, where the run notebook opens the run's folder and the lock is
kept until the executed notebook is in the folder (run.kernel); nothing is lent between processes.
"""
from __future__ import annotations

import errno
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["RunLock", "RunLocked", "lock_holder", "describe", "LOCK_FILE"]

LOCK_FILE = "run.lock"
_LOG = logging.getLogger("mcqa_toolkit.records")
_CONTENDED = (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES)

# The run locks this process holds: lock file -> (pid, thread ident, depth). flock(2) locks belong to an open
# file description, so a second open() of the same file in this process would conflict with the first; this
# table is what makes the lock re-entrant for its thread (and the pid tells a forked child it holds nothing).
_HELD: dict[str, tuple[int, int, int]] = {}
_GUARD = threading.Lock()


class RunLocked(RuntimeError):
    """Another process (or thread) is writing this run folder; nothing was written."""

    def __init__(self, run_dir: Path, holder: dict[str, Any]):
        self.run_dir, self.holder = Path(run_dir), dict(holder)
        super().__init__(f"{run_dir} is being run by another process ({describe(holder)}); wait for it to end, "
                         "stop it, or use another output folder")


def describe(holder: dict[str, Any]) -> str:
    """'pid 123 on host x, since 2025-01-01 12:00:00' (what is known of a holder)."""
    if not holder:
        return "holder not recorded yet"
    parts = [f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}"]
    if holder.get("started"):
        parts.append(f"since {holder['started']}")
    if holder.get("thread") and holder.get("pid") == os.getpid():
        parts.append(f"thread {holder['thread']} of this process")
    return ", ".join(parts)


def _read(fd: int) -> dict[str, Any]:
    try:
        raw = os.pread(fd, 4096, 0)
        data = json.loads(raw) if raw.strip() else {}
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def lock_holder(run_dir: str | Path) -> dict[str, Any] | None:
    """Who holds the run folder's lock ({} when the holder is not recorded yet), or None when nobody does
    (or the folder has no lock file). Creates nothing."""
    path = Path(run_dir) / LOCK_FILE
    if fcntl is None or not path.exists():
        return None
    key = str(path.resolve())
    with _GUARD:
        held = _HELD.get(key)
    if held is not None and held[0] == os.getpid():
        return None if held[1] == threading.get_ident() else {"pid": os.getpid(), "host": socket.gethostname(),
                                                              "thread": held[1]}
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in _CONTENDED:
                return None
            return _read(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _flock(fd: int, tries: int = 5, pause: float = 0.05) -> OSError | None:
    """Lock `fd` exclusively; None on success, else the last error. Contention is retried for a moment:
    lock_holder's probe holds a shared lock for microseconds, which must not refuse a real writer."""
    for attempt in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except OSError as e:
            if e.errno not in _CONTENDED or attempt == tries - 1:
                return e
            time.sleep(pause)
    raise AssertionError("unreachable")


class RunLock:
    """`with RunLock(run_dir): ...` holds the folder's lock (RunLocked when another writer holds it)."""

    def __init__(self, run_dir: str | Path):
        self.dir = Path(run_dir)
        self.path = self.dir / LOCK_FILE
        self.stale: dict[str, Any] = {}   # the holder record of a dead holder this lock took over
        self._fd: int | None = None
        self._key = ""

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock now or raise RunLocked naming the holder (no waiting)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self._key = str(self.path.resolve())
        me = (os.getpid(), threading.get_ident())
        with _GUARD:
            held = _HELD.get(self._key)
            if held is not None and held[0] == me[0]:
                if held[1] != me[1]:
                    raise RunLocked(self.dir, {"pid": me[0], "host": socket.gethostname(), "thread": held[1]})
                _HELD[self._key] = (*me, held[2] + 1)
                return
            if fcntl is None:
                _LOG.warning("%s: run folders cannot be locked on this platform (no fcntl); a second writer "
                             "would not be detected", self.dir)
                _HELD[self._key] = (*me, 1)
                return
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            failure = _flock(fd)
            if failure is not None:
                holder = _read(fd) if failure.errno in _CONTENDED else {}
                os.close(fd)
                if failure.errno not in _CONTENDED:  # e.g. a filesystem without locks
                    _LOG.warning("%s: cannot lock %s (%s); a second writer would not be detected", self.dir,
                                 self.path.name, failure.strerror)
                    _HELD[self._key] = (*me, 1)
                    return
                raise RunLocked(self.dir, holder)
            previous = _read(fd)
            if previous:  # a holder record nobody holds: its process died without releasing the lock
                self.stale = previous
                _LOG.warning("%s: took over the lock of a run that ended without releasing it (%s); its finished "
                             "records are kept and the run resumes", self.dir, describe(previous))
            record = {"pid": me[0], "host": socket.gethostname(), "thread": me[1],
                      "started": time.strftime("%Y-%m-%d %H:%M:%S %z")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
            self._fd = fd
            _HELD[self._key] = (*me, 1)

    def release(self) -> None:
        """Release one level; the last one clears the holder record and unlocks."""
        with _GUARD:
            held = _HELD.get(self._key)
            if held is None or held[0] != os.getpid():
                return
            if held[2] > 1:
                _HELD[self._key] = (held[0], held[1], held[2] - 1)
                return
            del _HELD[self._key]
            fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.ftruncate(fd, 0)  # a released lock records no holder (a record left behind means a dead one)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
