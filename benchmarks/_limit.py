"""The machine's raw forward throughput for a workload, measured in the benchmark's own run.

The limit our engine is held to: tokens/s of one plain batched forward of the model body (no LM head, no
cache, no masks of ours) over as many tokens as the workload has unique tokens, laid out as rows of the
workload's mean prompt length, so attention spans real prompt lengths as in the workload. Any engine that
forwards each unique token once cannot beat it by more than attention-context effects; `frac_of_limit` =
our unique tokens per second / this rate.
"""
from __future__ import annotations

import math
import time
from typing import Any

import torch


@torch.inference_mode()
def raw_forward_rate(lm: Any, n_tokens: int, row_len: int, repeats: int = 2) -> tuple[float, tuple[int, int]]:
    """(tokens/s, (rows, length)) of `lm`'s body forwarding ~n_tokens as rows of ~row_len; best of `repeats`
    timed calls after a small warm-up (seeded random ids: speed does not depend on which tokens)."""
    row_len = max(1, min(row_len, n_tokens))
    rows = max(1, round(n_tokens / row_len))
    length = math.ceil(n_tokens / rows)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, min(lm.model.config.vocab_size, 30000), (rows, length), generator=gen).to(lm.device)
    body = lm.model.base_model
    body(input_ids=ids[:1, :32], use_cache=False)
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        body(input_ids=ids, use_cache=False)
        if ids.device.type == "cuda":
            torch.cuda.synchronize(ids.device)
        best = min(best, time.perf_counter() - t0)
    return rows * length / best, (rows, length)
