"""From final hidden states to the log-probs a request asks for, computed only where they are needed.

Gemma 3's LM head has 262k outputs per position and costs more per position than the transformer body, so the
engine takes the hidden states of the scored positions only (every request's, for a whole block of items) and
runs the head over them `head_rows` positions at a time (bounding the positions x vocabulary logits tensor).
`request_logprobs` is the same pick of candidates / continuation targets from full logits, used by the naive
reference path (engine.naive_scores) and precision.naive_padded_scores.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from mcqa_toolkit.backends.hf.masks import upload
from mcqa_toolkit.backends.hf.request import EngineStats, Request


def lm_head(model: torch.nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """Logits from final hidden states exactly as the model's own forward computes them (incl. softcapping)."""
    logits = model.get_output_embeddings()(hidden)
    cfg = model.config
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


def head_logprobs(model: torch.nn.Module, reqs: Sequence[Request], scored: Sequence[Sequence[int]],
                  hidden: torch.Tensor, head_rows: int, stats: EngineStats) -> list[np.ndarray]:
    """Log-probs of every request's targets: logits - logsumexp(logits) at its scored positions (`scored[k]`:
    request k's rows of `hidden`), computed `head_rows` positions at a time. Logits are indexed on their own
    device (a model split over devices may run its head on another device than its last layer)."""
    device = hidden.device
    at, target, spans = [], [], []
    for r, pos in zip(reqs, scored):
        if r.candidates is not None:  # one position, several candidate next tokens
            at += list(pos) * len(r.candidates)
            target += r.candidates
        else:                         # one position per continuation token, its own target each
            at += pos
            target += r.tokens[r.n_context:]
        spans.append(len(at))
    at_np = np.asarray(at, dtype=np.int64)
    chunks = [(lo, min(lo + head_rows, len(hidden))) for lo in range(0, len(hidden), head_rows)]
    sels = [np.nonzero((at_np >= lo) & (at_np < hi))[0] for lo, hi in chunks]  # on the host: no device sync
    at_t, target_t, *sel_t = upload([at_np, np.asarray(target), *sels], device)
    picked = torch.empty(len(at), dtype=torch.float32, device=device)
    lse = torch.empty(len(hidden), dtype=torch.float32, device=device)
    for (lo, hi), sel in zip(chunks, sel_t):
        logits = lm_head(model, hidden[lo:hi]).float()
        lse[lo:hi] = logits.logsumexp(-1)
        picked[sel] = logits[(at_t[sel] - lo).to(logits.device), target_t[sel].to(logits.device)].to(device)
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
