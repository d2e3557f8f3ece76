"""From final hidden states to the log-probs a request asks for, computed only where they are needed.

Gemma 3's LM head has 262k outputs per position and costs more per position than the transformer body, so the
engine takes the hidden states of the scored positions only (every request's, for a whole block of items) and
runs the head over them `head_rows` positions at a time (bounding the positions x vocabulary logits tensor).
`request_logprobs` is the same pick of candidates / continuation targets from full logits, used by the naive
reference path (engine.naive_scores) and precision.naive_padded_scores.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
import torch

from mcqa_toolkit.backends.hf.masks import text_config, upload
from mcqa_toolkit.backends.hf.request import EngineStats, Request

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def scale_logits(model: torch.nn.Module, logits: torch.Tensor) -> torch.Tensor:
    """What the model's own forward does to its head's output (soft-capping, Cohere / Granite scales)."""
    cfg = text_config(model)
    cap = getattr(cfg, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    scale = getattr(cfg, "logit_scale", None)  # Cohere-style
    if isinstance(scale, (int, float)) and getattr(cfg, "model_type", "").startswith("cohere"):
        logits = logits * scale
    scaling = getattr(cfg, "logits_scaling", None)  # Granite-style
    if isinstance(scaling, (int, float)) and scaling != 1:
        logits = logits / scaling
    return logits


def lm_head(model: PreTrainedModel, hidden: torch.Tensor) -> torch.Tensor:
    """Logits from final hidden states exactly as the model's own forward computes them (incl. softcapping)."""
    return scale_logits(model, model.get_output_embeddings()(hidden))


def _lse_and_pick(model: PreTrainedModel, hidden: torch.Tensor, pairs: list[tuple[torch.Tensor, torch.Tensor,
                  torch.Tensor, int]], picked: torch.Tensor, vocab_chunk: int | None, linear: Callable) -> torch.Tensor:
    """fp32 log-sum-exp of the logits at every row of `hidden`, writing the picked logits into `picked`: per
    vocabulary slice of `vocab_chunk` entries (None: the whole vocabulary at once), `pairs[c]` = (indices into
    `picked`, rows, targets - slice start) of the targets in slice c. The slices' running maximum and sum of
    exponentials combine to the same log-sum-exp up to float rounding, without the (rows x vocabulary) logits."""
    head = model.get_output_embeddings()
    n_vocab = head.weight.shape[0] if vocab_chunk else 1
    step = vocab_chunk or n_vocab
    m = s = None
    for c, v0 in enumerate(range(0, n_vocab, step)):
        v1 = min(n_vocab, v0 + step)
        if not vocab_chunk:
            logits = lm_head(model, hidden).float()
        else:
            bias = head.bias[v0:v1] if head.bias is not None else None
            logits = scale_logits(model, linear(hidden, head.weight[v0:v1], bias)).float()
        where, rows, cols, _ = pairs[c]
        if where.numel():
            picked[where] = logits[rows, cols].to(picked.device)
        top = logits.amax(-1)
        if m is None:
            m, s = top, (logits - top[:, None]).exp().sum(-1)
        else:
            assert s is not None  # set with m on the first slice
            new = torch.maximum(m, top)
            s = s * (m - new).exp() + (logits - new[:, None]).exp().sum(-1)
            m = new
    assert m is not None and s is not None  # n_vocab >= 1: at least one slice
    return m + s.log()


def head_logprobs(model: PreTrainedModel, reqs: Sequence[Request], scored: tuple[np.ndarray, np.ndarray],
                  hidden: torch.Tensor, head_rows: int, stats: EngineStats, vocab_chunk: int | None = None,
                  linear: Callable = torch.nn.functional.linear) -> list[np.ndarray]:
    """Log-probs of every request's targets: logits - logsumexp(logits) at its scored positions (`scored`: the
    rows of `hidden` of every request in request order, and how many each has), computed `head_rows` positions at
    a time, and over `vocab_chunk` vocabulary entries at a time when set (a plain linear head only; the slices'
    logits stay in the CPU's cache instead of a (positions x 262k) tensor going through memory several times).
    Logits are indexed on their own device (a model split over devices may run its head on another device than
    its last layer); the selections are made on the host in a few array operations for the whole block (no loop
    per position), so nothing waits for the device until the values are read. `linear`: the product of a
    vocabulary slice (the engine's kernel)."""
    device = hidden.device
    rows, counts = scored
    is_cand = np.fromiter((r.candidates is not None for r in reqs), dtype=bool, count=len(reqs))
    n_cand = np.fromiter((len(r.candidates or ()) for r in reqs), dtype=np.int64, count=len(reqs))
    # a candidates request reads its one position once per candidate; a continuation one each position once
    at_np = np.repeat(rows, np.repeat(np.where(is_cand, n_cand, 1), counts))
    target_np = np.fromiter(chain.from_iterable(r.tokens[r.n_context:] if r.candidates is None else r.candidates
                                                for r in reqs), dtype=np.int64, count=len(at_np))
    spans = np.cumsum(np.where(is_cand, n_cand, counts))
    head = model.get_output_embeddings()
    if vocab_chunk and type(head) is not torch.nn.Linear:
        vocab_chunk = None
    n_vocab = head.weight.shape[0] if vocab_chunk else 1
    step = vocab_chunk or np.iinfo(np.int64).max  # None: one slice holding every target
    picked = torch.empty(len(at_np), dtype=torch.float32, device=device)
    lse = torch.empty(len(hidden), dtype=torch.float32, device=device)
    arrays, layout = [at_np], []
    per_chunk = -(-n_vocab // step) if vocab_chunk else 1
    # every target's (row chunk, vocabulary slice), its targets in ascending order within each
    cell = (at_np // head_rows) * per_chunk + (target_np // step if vocab_chunk else 0)
    order = np.argsort(cell, kind="stable")
    bounds = np.cumsum(np.bincount(cell, minlength=-(-len(hidden) // head_rows) * per_chunk))
    for c, lo in enumerate(range(0, len(hidden), head_rows)):
        hi = min(lo + head_rows, len(hidden))
        for v, v0 in enumerate(range(0, n_vocab, step)):
            k = c * per_chunk + v
            sel = order[(bounds[k - 1] if k else 0): bounds[k]]
            arrays += [sel, at_np[sel] - lo, target_np[sel] - v0]
            layout.append((lo, hi))
    at_t, *flat = upload(arrays, device)
    pairs = [(flat[3 * k], flat[3 * k + 1], flat[3 * k + 2], 0) for k in range(len(layout))]
    for k in range(0, len(layout), per_chunk):
        lo, hi = layout[k]
        lse[lo:hi] = _lse_and_pick(model, hidden[lo:hi], [(w, r.to(hidden.device), c.to(hidden.device), 0)
                                                          for w, r, c, _ in pairs[k: k + per_chunk]],
                                   picked, vocab_chunk, linear).to(device)
    stats.scored_positions += len(hidden)
    values = (picked - lse[at_t]).cpu().double().numpy()  # float64 on the host (MPS has no float64)
    return np.split(values, spans[:-1])


def request_logprobs(r: Request, logits: torch.Tensor) -> np.ndarray:
    """A request's result from the full logits at its positions n_context-1 .. end (fp32 log-softmax)."""
    logp = logits.float().log_softmax(-1)
    if r.candidates is not None:
        return logp[-1, torch.tensor(r.candidates, device=logp.device)].double().cpu().numpy()
    tgt = torch.tensor(r.tokens[r.n_context:], device=logp.device)
    return logp[:-1].gather(-1, tgt.unsqueeze(-1)).squeeze(-1).double().cpu().numpy()
