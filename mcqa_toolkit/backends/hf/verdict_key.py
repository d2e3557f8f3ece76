"""What a self-check verdict holds for: the model (class, configuration, weights), the engine's code and options,
the package versions, device, dtype and the CPU's kernels; any change to one checks the model again."""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata as md
import json
import weakref
from pathlib import Path
from typing import Any

import torch

VERSION = 2                # of the verdict's format


@functools.lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """sha256 of the engine's own code (this folder's modules): any change to it checks every model again."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


_DIGESTS: weakref.WeakKeyDictionary[Any, tuple[tuple[int, ...], str]] = weakref.WeakKeyDictionary()


def _weights(lm: Any) -> str:
    """The model's weights: the GGUF's sha256 when known, else a digest of every parameter's shape and sum
    (accumulated in float64 where the weights are), computed again only after a parameter changed in place (its
    version counter: a fine-tuning step, a load_state_dict)."""
    if getattr(lm, "weights_sha256", ""):
        return lm.weights_sha256
    params = list(lm.model.named_parameters())
    versions = tuple(p._version for _, p in params)
    known = _DIGESTS.get(lm.model)
    if known is not None and known[0] == versions:
        return known[1]
    h = hashlib.sha256()
    with torch.no_grad():
        for name, p in params:
            h.update(f"{name}{tuple(p.shape)}{p.dtype}{float(torch.sum(p, dtype=torch.float64))!r}".encode())
    _DIGESTS[lm.model] = (versions, h.hexdigest())
    return h.hexdigest()


def key(engine: Any) -> str:
    """What a verdict holds for: model (class, configuration, weights), engine code and options, versions, device,
    dtype, the CPU's kernels."""
    lm = engine.lm
    device = lm.device
    parts = {"version": VERSION, "engine": engine_fingerprint(), "class": type(lm.model).__name__,
             "config": lm.model.config.to_json_string(use_diff=False), "weights": _weights(lm),
             "options": engine.path_options(), "dtype": str(engine.dtype), "device": device.type,
             "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else
             torch.backends.cpu.get_cpu_capability(),
             "packages": {p: _version(p) for p in ("torch", "transformers")}}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _version(package: str) -> str | None:
    try:
        return md.version(package)
    except md.PackageNotFoundError:
        return None
