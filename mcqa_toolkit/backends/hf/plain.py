"""The plain path: every distinct sequence through the model's own forward from its first token, no cache of ours.

`plain_scores` is what the engine scores with on a model where its self-check (selfcheck.py) refused every path that
shares prefixes (a family whose attention or recurrent state the engine cannot continue exactly); `forward_logits`,
one sequence's forward, is that check's reference.
Sequences of one length go through one call of at most PLAIN_TOKENS tokens (no padding, no mask: each row is
computed as it would be alone, up to the rounding of a wider matrix product); logits are asked for the scored
positions only where the model's forward takes `logits_to_keep`. `sequential_scores` is the path between: each
distinct sequence continued from a copy of the run prefix's cache through the model's own forward, one sequence per
call (a recurrent or hybrid state continues exactly where a trie of packed rows cannot). `naive_scores` is the
tests' reference: one
sequence per call, with full logits by default (as a generic evaluation loop computes them).
"""
from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from mcqa_toolkit.backends.hf.heads import request_logprobs
from mcqa_toolkit.backends.hf.request import Request

PLAIN_TOKENS = 8192  # tokens per call of the plain path (rows of one length)


def takes(fn: Any, name: str) -> bool:
    """Whether `fn` declares a parameter `name` (a model forward's `logits_to_keep`, `cache`)."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def forward_logits(model: Any, ids: torch.Tensor, keep: int) -> torch.Tensor:
    """(rows, keep, vocabulary) logits of the last `keep` positions of `ids` (rows, length), no cache."""
    if takes(model.forward, "logits_to_keep"):
        logits = model(input_ids=ids, use_cache=False, logits_to_keep=keep).logits
    else:
        logits = model(input_ids=ids, use_cache=False).logits
    return logits[:, -keep:]


@torch.inference_mode()
def plain_scores(lm: Any, requests: Sequence[Request], max_tokens: int = PLAIN_TOKENS) -> list[np.ndarray]:
    """Per request, what it asks (engine.Request) from one forward of its whole sequence: identical requests once,
    sequences of one length together."""
    out: list[np.ndarray | None] = [None] * len(requests)
    by_length: dict[int, list[int]] = {}
    for i, r in enumerate(requests):
        by_length.setdefault(len(r.tokens), []).append(i)
    for length, idx in by_length.items():
        distinct = list(dict.fromkeys(requests[i].tokens for i in idx))
        keep = max(length - requests[i].n_context + 1 for i in idx)
        rows = max(1, max_tokens // length)
        logits: dict[tuple[int, ...], torch.Tensor] = {}
        for lo in range(0, len(distinct), rows):
            chunk = distinct[lo: lo + rows]
            got = forward_logits(lm.model, torch.tensor(chunk, device=lm.device), keep)
            logits.update(zip(chunk, got, strict=True))
        for i in idx:
            r = requests[i]
            out[i] = request_logprobs(r, logits[r.tokens][keep - (length - r.n_context + 1):])
    return out  # type: ignore[return-value]


@torch.inference_mode()
def sequential_scores(engine: Any, reqs: Sequence[Request], run: tuple[int, ...]) -> list[np.ndarray]:
    """Per request (of one item, each extending `run`): its log-probs from the model's forward of what follows the
    run prefix on a copy of the engine's cache of it (engine._prefix_cache)."""
    lm = engine.lm
    model = lm.model
    base = engine._prefix_cache(run) if run else None
    name = "cache" if takes(model.forward, "cache") else "past_key_values"
    keep_arg = takes(model.forward, "logits_to_keep")
    out = []
    for r in reqs:
        keep = len(r.tokens) - r.n_context + 1
        kwargs: dict[str, Any] = {"logits_to_keep": keep} if keep_arg else {}
        if base is not None:
            kwargs.update({name: copy.deepcopy(base), "use_cache": True})
        ids = torch.tensor([r.tokens[len(run):]], device=lm.device)
        logits = model(input_ids=ids, **kwargs).logits[0, -keep:]
        out.append(request_logprobs(r, logits))
        engine.stats.forwarded += len(r.tokens) - len(run)
        engine.stats.calls += 1
    return out


@torch.inference_mode()
def naive_scores(lm: Any, requests: Sequence[Request], full_logits: bool = True) -> list[np.ndarray]:
    """Reference computation: each sequence forwarded alone through the model's own forward, no cache.

    `full_logits=True` is the plain loop (logits at every position, as a generic evaluation loop computes);
    False asks the model for the scored positions only (`logits_to_keep`), same numbers, much less LM-head work.
    """
    out = []
    for r in requests:
        ids = torch.tensor([r.tokens], device=lm.device)
        keep = 0 if full_logits else len(r.tokens) - r.n_context + 1
        logits = lm.model(input_ids=ids, use_cache=False, logits_to_keep=keep).logits[0]
        out.append(request_logprobs(r, logits[-(len(r.tokens) - r.n_context + 1):]))
    return out
