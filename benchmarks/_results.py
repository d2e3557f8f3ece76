"""What a benchmark writes to results/benchmarks/: its figures as JSON, without machine paths.

Raw files are committed and the docs are rendered from them (scripts/render_docs.py), so a path of the machine
that ran the benchmark (the model cache, a temporary folder, the checkout, the home folder) is written as a
placeholder naming what it was: MCQA_CACHE, TMP, REPO, HOME. A figure that compared nothing is written as null
by the benchmark itself (e.g. scoring_throughput's agreement with the naive path when --naive-items 0). Every file
also gets `machine`, the machine reference of benchmarks/_machine.py (the commit, a GEMM rate on the benchmark's
device and a fixed host-work timing), measured by the writer in the benchmark's own process, so that absolute
figures from different days can be compared.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
REFERENCE_FIELDS = {"commit", "gemm", "host"}  # benchmarks/_machine.reference's parts


def _places() -> list[tuple[str, str]]:
    """(machine prefix, placeholder), longest prefix first."""
    from mcqa_toolkit.backends.cache import default_cache_dir

    places = {str(default_cache_dir()): "MCQA_CACHE", str(Path(tempfile.gettempdir()).resolve()): "TMP",
              tempfile.gettempdir(): "TMP", "/tmp": "TMP", str(REPO): "REPO", os.path.expanduser("~"): "HOME"}
    return sorted(((k, v) for k, v in places.items() if k not in ("", "/")), key=lambda kv: -len(kv[0]))


def scrubbed(value: Any, places: list[tuple[str, str]] | None = None) -> Any:
    """`value` with every machine path in its strings written as its placeholder (recursively)."""
    places = _places() if places is None else places
    if isinstance(value, str):
        for prefix, name in places:
            value = value.replace(prefix, name)
        return value
    if isinstance(value, dict):
        return {k: scrubbed(v, places) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrubbed(v, places) for v in value]
    return value


def machine_reference(device: Any = "cpu", tokenizer: Any = None) -> dict[str, Any]:
    """benchmarks/_machine.py's reference, measured now (in the caller's process)."""
    try:
        import _machine
    except ModuleNotFoundError:
        from benchmarks import _machine
    return _machine.reference(device, tokenizer)


def write_json(path: str | os.PathLike | None, result: dict[str, Any], device: Any = "cpu",
               tokenizer: Any = None) -> Path | None:
    """Write a benchmark's figures to `path` (when given), machine paths scrubbed, with the machine reference
    (`machine`: measured here on `device`, with `tokenizer` when it is the embedded Gemma tokenizer; fields the
    benchmark put in `machine` itself, e.g. make_demo's cores and load, are kept beside it and win); the path
    written."""
    if not path:
        return None
    own = result.get("machine") or {}
    if not REFERENCE_FIELDS <= own.keys():
        result = {**result, "machine": {**machine_reference(device, tokenizer), **own}}
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(scrubbed(json.loads(json.dumps(result, default=str))), indent=1) + "\n")
    return out
