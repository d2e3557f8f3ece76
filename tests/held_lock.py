"""A run folder whose one-writer lock another process holds (records.lock), for the tests of what a writer does when
it meets one: `with held_by_another_process(run_dir) as holder: ...` (holder is the subprocess.Popen)."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from paths import REPO


@contextlib.contextmanager
def held_by_another_process(run_dir: Path) -> Iterator[subprocess.Popen]:
    """A child process takes the folder's lock and holds it until the block ends (then it is killed)."""
    held = run_dir.parent / f"{run_dir.name}.held"  # beside the folder: the folder holds only what the holder wrote
    code = (f"from mcqa_toolkit.records.lock import RunLock; import pathlib, time; RunLock({str(run_dir)!r})"
            f".acquire(); pathlib.Path({str(held)!r}).write_text('x'); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 60
        while not held.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the child did not take the lock"
            time.sleep(0.02)
        yield proc
    finally:
        proc.kill()
        proc.wait(10)
