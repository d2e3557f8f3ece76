"""Writing a run folder's files safely: `atomic` (write to a temporary name, force to disk, rename: readers see
the old file or the new one, never half of one), JSON side files through it, and RunWriteError, the one clear
error of a write that fails (disk full, file too large, no permission) naming the file and what is intact."""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["RunWriteError", "atomic", "write_json", "read_json", "json_default"]


class RunWriteError(OSError):
    """A run folder file could not be written: one sentence naming the file and what is intact; the run
    resumes once the cause is gone."""

    def __init__(self, path: Path, what: str, cause: OSError, kept: str):
        reason = cause.strerror or str(cause)
        super().__init__(f"{path}: could not write {what} ({reason}); {kept}")
        self.errno, self.filename = cause.errno, str(path)

    def __str__(self) -> str:
        return str(self.args[0])


def atomic(path: Path, write: Callable[[Path], Any], what: str, kept: str) -> None:
    """write(tmp) to `.<name>.<pid>.tmp` beside `path`, force it to disk, rename it over `path`. An OSError
    becomes RunWriteError naming `path` (the temporary file is removed; a killed writer's is removed by the
    next writer of the folder, RunDir.remove_leftovers)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise RunWriteError(path, what, e, kept) from None


def write_json(path: Path, data: dict[str, Any], kept: str = "the records are intact") -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False, default=json_default)
    atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), path.name, kept)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON side file ({} when absent); a damaged one is a ValueError naming it."""
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({getattr(e, 'msg', e)}); it was damaged outside mcqa_toolkit's "
                         "atomic writes: delete the run folder to recompute it") from None


def json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (set, tuple, Path)):
        return list(o) if not isinstance(o, Path) else str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
