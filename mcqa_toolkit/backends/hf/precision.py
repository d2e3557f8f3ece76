"""How close two half-precision scorings are, measured against the naive path's own rounding noise.

In bf16/fp16 the engine and the naive loop compute the same function with different matrix shapes (packed rows
on a cache vs one full sequence), so their results differ by rounding. That difference means something only
next to the noise of the naive path itself: `naive_padded_scores` is the naive computation in a second layout
(sequences right-padded into batches, attention mask over the padding), and the spread between the two naive
layouts is the noise floor any other layout (ours included) is held to. Random-weight models give near-tied
options, so choices are compared only where the naive path's top-2 margin exceeds that noise.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from mcqa_toolkit.backends.hf.engine import Request, request_logprobs
from mcqa_toolkit.backends.hf.loading import LM


@torch.inference_mode()
def naive_padded_scores(lm: LM, requests: Sequence[Request], batch_size: int = 8) -> list[np.ndarray]:
    """`engine.naive_scores` in another layout: `batch_size` sequences per forward call, right-padded, with an
    attention mask (real tokens keep their positions, pads are masked out). Same numbers in fp32; in half
    precision the different matrix shapes round differently."""
    pad = lm.tokenizer.pad_token_id or 0
    out: list[np.ndarray] = []
    for lo in range(0, len(requests), batch_size):
        chunk = requests[lo: lo + batch_size]
        width = max(len(r.tokens) for r in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long, device=lm.device)
        mask = torch.zeros((len(chunk), width), dtype=torch.long, device=lm.device)
        for i, r in enumerate(chunk):
            ids[i, : len(r.tokens)] = torch.tensor(r.tokens, device=lm.device)
            mask[i, : len(r.tokens)] = 1
        logits = lm.model(input_ids=ids, attention_mask=mask, use_cache=False).logits
        out.extend(request_logprobs(r, logits[i, r.n_context - 1: len(r.tokens)]) for i, r in enumerate(chunk))
    return out


def max_delta(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """Largest |a - b| over all requests' values."""
    return max((float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True)), default=0.0)


def top2_margins(scores: Sequence[np.ndarray]) -> np.ndarray:
    """Per scored prompt: best minus second-best value (inf with a single value)."""
    out = []
    for s in scores:
        top = np.sort(np.asarray(s, dtype=float))[::-1]
        out.append(top[0] - top[1] if top.size > 1 else np.inf)
    return np.array(out)


def choice_agreement(reference: Sequence[np.ndarray], other: Sequence[np.ndarray], noise: float) -> tuple[int, int]:
    """(same argmax, prompts compared) over the prompts whose reference top-2 margin exceeds `noise`."""
    keep = top2_margins(reference) > noise
    same = sum(int(np.argmax(a)) == int(np.argmax(b)) for a, b, k in zip(reference, other, keep, strict=True) if k)
    return same, int(keep.sum())
