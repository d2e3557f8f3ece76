"""The linear layers of the engine's forward calls through oneDNN on a CPU (the engine's `linear="onednn"`).

Why: on a CPU, PyTorch computes an fp32 `nn.Linear` with MKL's GEMM, and MKL picks its code path by CPU vendor: on
the reference machine (AMD EPYC, AVX-512) it runs its AVX2 kernels, while oneDNN (also inside PyTorch, used by its
own compiler for packed weights) runs AVX-512 ones: 184 vs 431 GFLOP/s on a 4096^3 product, 169 vs 331 on the
model's 8192 x 640 x 2048 shape (benchmarks/_reference.py measures both in every scoring benchmark). The body's
linear layers are most of its FLOPs, so this is the largest single factor in the engine's CPU speed.

`onednn_linears(model, packed)` makes every `nn.Linear` of the model compute `x W^T + b` with
`torch.ops.mkldnn._linear_pointwise` for the duration of the block, on weights reordered once into oneDNN's blocked
layout (`packed`: a dict the engine keeps, one entry per weight, renewed when a weight changes). The sums run in
another order than MKL's, so results differ from the naive path by float rounding (the engine's 1e-4 equality
holds; tests/backends/hf/test_kernels.py). Outside the block the modules are as they were. Only fp32 and bf16
weights on a CPU with oneDNN are routed; anything else keeps PyTorch's linear.
"""
from __future__ import annotations

import contextlib
import types
import weakref
from typing import Any, Iterator

import torch

LINEAR = ("torch", "onednn")
ONEDNN_DTYPES = (torch.float32, torch.bfloat16)


def onednn_available(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether oneDNN's linear can run on `device` in `dtype` (a CPU, a oneDNN build, fp32 or bf16)."""
    return torch.device(device).type == "cpu" and torch.backends.mkldnn.is_available() and dtype in ONEDNN_DTYPES


def _onednn_forward(module: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    shape = x.shape
    y = torch.ops.mkldnn._linear_pointwise(x.reshape(-1, shape[-1]), module._mcqa_packed, module.bias, "none", [],
                                           "")
    return y.view(*shape[:-1], y.shape[-1])


Packed = dict[int, tuple[int, torch.Tensor]]


def _pack(module: torch.nn.Linear, packed: Packed) -> torch.Tensor:
    """The module's weight in oneDNN's layout, from `packed` (keyed by the weight's id, dropped when the weight is
    freed) unless the weight changed since (its version counter)."""
    w = module.weight
    hit = packed.get(id(w))
    if hit is None or hit[0] != w._version:
        if hit is None:
            weakref.finalize(w, packed.pop, id(w), None)
        with torch.inference_mode():
            hit = packed[id(w)] = (w._version, torch.ops.mkldnn._reorder_linear_weight(w.detach(), 1024))
    return hit[1]


@contextlib.contextmanager
def onednn_linears(model: torch.nn.Module, packed: Packed) -> Iterator[None]:
    """Every `nn.Linear` of `model` (on a CPU, fp32 / bf16) computes through oneDNN for the block; `packed` holds
    the reordered weights between blocks. The modules' own forward is back afterwards, whatever happens."""
    routed = []
    try:
        for m in model.modules():
            if type(m) is torch.nn.Linear and onednn_available(m.weight.device, m.weight.dtype):
                m._mcqa_packed = _pack(m, packed)
                m.forward = types.MethodType(_onednn_forward, m)
                routed.append(m)
        yield
    finally:
        for m in routed:
            del m.forward
            del m._mcqa_packed
