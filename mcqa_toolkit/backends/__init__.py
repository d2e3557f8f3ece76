"""Backends: how a model is reached. `base.Backend` is the protocol run/ and scoring/ use; `load_backend`
builds one from a params-file entry.

    backend = load_backend("gemma-3-270m")                      # local transformers model (embedded default)
    backend = load_backend({"backend": "hf", "model": "google/gemma-3-1b-pt", "device": "cuda"})

Implementations are imported lazily, so `import mcqa_toolkit.backends` does not import torch.
"""
from __future__ import annotations

import importlib
from typing import Any

from mcqa_toolkit.backends.base import (Backend, Capabilities, CapabilityError, Continuation, ContinuationLogprobs,
                                        Generation, LetterLogprobs, check_capabilities)

# backend kind -> "module:factory"; a factory takes the entry's keyword arguments and returns a Backend
REGISTRY: dict[str, str] = {
    "hf": "mcqa_toolkit.backends.hf.backend:load",
    "openai": "mcqa_toolkit.backends.openai:load",
    "anthropic": "mcqa_toolkit.backends.anthropic:load",
}


def load_backend(spec: str | dict[str, Any] | Backend, **overrides: Any) -> Backend:
    """A Backend from a model name/path (local transformers model) or a dict {backend: kind, model: ..., ...}.

    `overrides` (e.g. device, dtype from a notebook) fill keys the entry does not set; None values are ignored.
    An already-built Backend is returned unchanged.
    """
    if isinstance(spec, Backend):
        return spec
    entry = {"backend": "hf", "model": spec} if isinstance(spec, str) else dict(spec)
    for key, value in overrides.items():
        if value is not None:
            entry.setdefault(key, value)
    kind = entry.pop("backend", "hf")
    if kind not in REGISTRY:
        raise ValueError(f"unknown backend {kind!r}; known: {sorted(REGISTRY)}")
    if "model" not in entry:
        raise ValueError(f"backend entry {spec!r} needs a 'model'")
    module, factory = REGISTRY[kind].split(":")
    return getattr(importlib.import_module(module), factory)(entry.pop("model"), **entry)


__all__ = ["Backend", "Capabilities", "CapabilityError", "Continuation", "ContinuationLogprobs", "Generation",
           "LetterLogprobs", "check_capabilities", "load_backend", "REGISTRY"]
