"""Backends: how a model is reached. `base.Backend` is the protocol run/ and scoring/ use; `load_backend`
builds one from a params-file entry.

    backend = load_backend("gemma-3-270m")                      # local transformers model (embedded default)
    backend = load_backend({"backend": "hf", "model": "google/gemma-3-1b-pt", "device": "cuda"})
    backend = load_backend({"backend": "openai", "model": "gpt-4o-mini", "api_key_env": "OPENAI_API_KEY"})
    backend = load_backend({"backend": "google", "model": "gemini-2.0-flash", "api_key_env": "GEMINI_API_KEY"})

Implementations are imported lazily, so `import mcqa_toolkit.backends` does not import torch.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcqa_toolkit.backends.base import (
    Backend,
    Capabilities,
    CapabilityError,
    Continuation,
    ContinuationLogprobs,
    Generation,
    LetterLogprobs,
)

# a factory takes the model and the entry's keyword arguments and returns a Backend
Factory = Callable[..., Backend]


def _hf() -> Factory:
    from mcqa_toolkit.backends.hf.backend import load
    return load


def _openai() -> Factory:
    from mcqa_toolkit.backends.openai import load
    return load


def _anthropic() -> Factory:
    from mcqa_toolkit.backends.anthropic import load
    return load


def _google() -> Factory:
    from mcqa_toolkit.backends.google import load
    return load


def _vllm() -> Factory:
    from mcqa_toolkit.backends.vllm import load
    return load


# backend kind -> a function that imports its factory when that kind is asked for (hf imports torch)
REGISTRY: dict[str, Callable[[], Factory]] = {
    "hf": _hf,
    "openai": _openai,
    "anthropic": _anthropic,
    "google": _google,
    "vllm": _vllm,
}


def backend_entry(spec: str | dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """The complete entry a backend is loaded from: {backend: kind, model, device, dtype, ...options}.

    `spec` is a model name/path (a local transformers model) or a params-file dict; `overrides` (device, dtype
    from a job) fill keys a local model's entry does not set (None values are ignored; servers and APIs
    choose their own). Two specs that load the same
    backend give equal entries (run.recipe.BackendCache keys on them)."""
    entry = {"backend": "hf", "model": spec} if isinstance(spec, str) else dict(spec)
    kind = entry.setdefault("backend", "hf")
    if kind not in REGISTRY:
        raise ValueError(f"unknown backend {kind!r}; known: {sorted(REGISTRY)}")
    if "model" not in entry:
        raise ValueError(f"backend entry {spec!r} needs a 'model'")
    if kind != "hf":
        return entry
    for key, value in overrides.items():
        if value is not None:
            entry.setdefault(key, value)
    return {"device": None, "dtype": None, **entry}


def load_backend(spec: str | dict[str, Any] | Backend, **overrides: Any) -> Backend:
    """A Backend from a model name/path (local transformers model) or a dict {backend: kind, model: ..., ...}
    (see `backend_entry`); an already-built Backend is returned unchanged. To load each model once for many
    runs, use run.recipe.BackendCache."""
    if isinstance(spec, Backend):
        return spec
    entry = backend_entry(spec, **overrides)
    kind, model = entry.pop("backend"), entry.pop("model")
    entry.pop("resources", None)  # what a Ray pool's worker asks of its node (run.pool), not a loading option
    return REGISTRY[kind]()(model, **entry)


__all__ = ["Backend", "Capabilities", "CapabilityError", "Continuation", "ContinuationLogprobs", "Generation",
           "LetterLogprobs", "backend_entry", "load_backend", "REGISTRY"]
