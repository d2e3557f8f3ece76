"""The float32 twin of a half-precision model, on which the self-checks judge the engine's structure.

Why: in bf16 / fp16 the engine and the plain forward compute the same function in a different order, and their
log-probs differ by the dtype's rounding: about one bf16 step of the largest logit (0.12-0.14 on the embedded
Gemma-3-270M's probe, whose log-probs reach 21 and a bf16 step there is 0.125), more than a wrong attention costs
on some families (granite_swa 0.004, gpt-oss 0.012 in fp32). Compared in the half dtype, a wrong path hides in the
rounding and a right one looks wrong. Every bf16 and fp16 value is exactly a float32 value, so a float32 copy of
the weights is the same model without that rounding: there an exact path is within the fp32 bound and a wrong one
is not. The copy costs twice the model's half-precision bytes while the check runs (`fits`); where that is not
free, the check judges in the dtype itself, to `steps` of its rounding.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from pathlib import Path
from typing import Any

import torch

FREE_SHARE = 0.5   # the twin is made only where its float32 bytes are at most this share of the free memory


def model_bytes(model: torch.nn.Module, dtype: torch.dtype = torch.float32) -> int:
    """The bytes of the model's parameters and floating buffers in `dtype`."""
    tensors = [*model.parameters(), *(b for b in model.buffers() if b.is_floating_point())]
    return sum(t.numel() for t in {id(t): t for t in tensors}.values()) * torch.finfo(dtype).bits // 8


def free_bytes(device: torch.device) -> int:
    """Free memory on `device` now: CUDA's free bytes, else the host's available memory (Linux's MemAvailable;
    0 where it cannot be read, so no twin is made)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def fits(lm: Any) -> bool:
    """Whether a float32 twin of `lm`'s model fits in FREE_SHARE of its device's free memory."""
    return model_bytes(lm.model) <= FREE_SHARE * free_bytes(lm.device)


def float32(lm: Any) -> Any | None:
    """`lm` with a float32 copy of its model (same device, same tokenizer; the original untouched), or None
    where it is already float32 or the copy does not fit."""
    if lm.dtype == torch.float32 or not fits(lm):
        return None
    return dataclasses.replace(lm, model=copy.deepcopy(lm.model).float())


def steps(dtype: torch.dtype, largest: float, n: int = 4) -> float:
    """`n` rounding steps of `dtype` at the magnitude `largest` (its ulp there: eps x 2^floor(log2 |largest|)): the
    bound of a comparison made in a half dtype itself (bf16: 0.5 at log-probs of 16-32)."""
    magnitude = 2.0 ** math.floor(math.log2(max(abs(largest), 1.0)))
    return n * torch.finfo(dtype).eps * magnitude
