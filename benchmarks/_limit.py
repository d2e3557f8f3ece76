"""The machine's raw forward throughput for a workload, measured in the benchmark's own run.

The limit our engine is held to: tokens/s of one plain batched forward of the model body (no LM head, no
cache, no masks of ours) over as many tokens as the workload has unique tokens, laid out as rows of the
workload's mean prompt length, so attention spans real prompt lengths as in the workload. Any engine that
forwards each unique token once cannot beat it by more than attention-context effects; `frac_of_limit` =
our unique tokens per second / this rate.

It is not a hard bound: rows of full prompt length pay dense causal attention over the whole row in every
layer (sdpa computes a sliding-window layer's masked keys too), while the engine's suffix tokens attend to
the cached prefix (at most window - 1 keys on sliding layers) plus their own row, so `frac_of_limit` can
exceed 1. The benchmarks therefore also print the stricter reference `SHORT_ROW` (rows of 256 tokens, no
context: attention nearly free, i.e. the throughput of the body's matrix products).
"""
from __future__ import annotations

import math
import platform
import time
from typing import Any

import torch

SHORT_ROW = 256          # row length of the strict (attention-free) reference
SHORT_ROW_TOKENS = 4096  # its token count: enough for a steady rate, short on a shared machine


def _sync(device: torch.device) -> None:
    """Wait for queued GPU work, so a timer around it measures the work (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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
        _sync(ids.device)
        t0 = time.perf_counter()
        body(input_ids=ids, use_cache=False)
        _sync(ids.device)
        best = min(best, time.perf_counter() - t0)
    return rows * length / best, (rows, length)


def model_flops(model: Any, tokens: int, head_positions: int) -> float:
    """Matrix-product FLOPs of forwarding `tokens` through the body and `head_positions` through the LM head:
    2 x parameters per token (attention's score/value products excluded: ~5% at 1.5k tokens for 8B shapes, so
    MFU here is a slight underestimate)."""
    emb = model.get_input_embeddings().weight
    body = sum(p.numel() for p in model.base_model.parameters() if p is not emb and p.dim() > 1)
    return 2.0 * body * tokens + 2.0 * model.get_output_embeddings().weight.numel() * head_positions


def mfu(model: Any, tokens: int, head_positions: int, seconds: float, peak_tflops: float) -> float:
    """Model FLOPs utilisation: the useful matrix-product FLOPs (unique tokens, scored positions) per second over
    the device's dense peak."""
    return model_flops(model, tokens, head_positions) / seconds / (peak_tflops * 1e12)


def device_facts(lm: Any, **versions: str) -> dict[str, str]:
    """Where a benchmark ran: device name, dtype, torch / transformers / CUDA versions (for the results table)."""
    import transformers

    name = torch.cuda.get_device_name(lm.device) if lm.device.type == "cuda" else platform.processor() or "cpu"
    out = {"device": name, "dtype": str(lm.dtype).removeprefix("torch."), "model": lm.name,
           "attention": lm.model.config._attn_implementation, "torch": torch.__version__,
           "transformers": transformers.__version__, "cuda": str(torch.version.cuda),
           "python": platform.python_version()}
    return {**out, **versions}
