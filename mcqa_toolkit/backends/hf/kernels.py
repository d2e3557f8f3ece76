"""The linear layers of the engine's forward calls through oneDNN on a CPU (the engine's `linear="onednn"`).

Why: on a CPU, PyTorch computes an fp32 `nn.Linear` with MKL's GEMM, and MKL picks its code path by CPU vendor: on
the reference machine (AMD EPYC, AVX-512) it runs its AVX2 kernels, while oneDNN (also inside PyTorch, behind
`torch.ops.mkldnn._linear_pointwise`) runs AVX-512 ones: about twice the rate on the model's shapes (measured in
every scoring benchmark by benchmarks/_reference.py: `gemm.torch_mm_gflops` vs `gemm.onednn_gflops`). The body's
linear layers are most of its FLOPs, and the LM head is one more, so this is the largest single factor in the
engine's CPU speed.

`onednn_linears(model)` makes every `nn.Linear` of the model compute `x W^T + b` with oneDNN for the duration of
the block, on the weights as they are (oneDNN reads the plain layout; reordering them into its blocked layout first
measured no faster and would keep a second copy of every weight). The sums run in another order than MKL's, so
results differ from the naive path by float rounding (the engine's 1e-4 equality holds:
tests/backends/hf/test_kernels.py). Outside the block the modules are as they were. Only fp32 and bf16 weights on
a CPU with oneDNN are routed, bf16 only where oneDNN can compute it (a CPU with bf16 instructions: an AVX2-only
CPU, or one whose ISA is forced down to AVX2, has no bf16 inner product); anything else keeps PyTorch's linear.
"""
from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Iterator

import torch

LINEAR = ("torch", "onednn")
ONEDNN_DTYPES = (torch.float32, torch.bfloat16)


def onednn_available(device: torch.device | str, dtype: torch.dtype) -> bool:
    """Whether oneDNN's linear can run on `device` in `dtype`: a CPU, a oneDNN build, fp32, or bf16 where this
    process's oneDNN computes a bf16 inner product (tried once: the CPU's instructions and a forced ISA decide)."""
    if torch.device(device).type != "cpu" or not torch.backends.mkldnn.is_available() or dtype not in ONEDNN_DTYPES:
        return False
    return dtype == torch.float32 or _onednn_runs(dtype)


@functools.cache
def _onednn_runs(dtype: torch.dtype) -> bool:
    """One 2 x 4 x 3 product in `dtype` through oneDNN: whether it has a kernel for it here."""
    try:
        onednn_linear(torch.ones(2, 4, dtype=dtype), torch.ones(3, 4, dtype=dtype))
    except RuntimeError:  # "could not create a primitive descriptor for the inner product ..."
        return False
    return True


def onednn_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """`torch.nn.functional.linear(x, weight, bias)` computed by oneDNN (any leading dimensions); while compiling
    (the engine's fused body, fused.py) through `mcqa::onednn_linear`, which the compiler calls as it is."""
    shape = x.shape
    product = onednn_op if torch.compiler.is_compiling() else _linear_pointwise
    y = product(x.reshape(-1, shape[-1]), weight, bias)
    return y.view(*shape[:-1], y.shape[-1])


def _linear_pointwise(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


@torch.library.custom_op("mcqa::onednn_linear", mutates_args=())
def onednn_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """oneDNN's linear of a 2D input as an operator the compiler does not look into (inductor cannot lower
    `mkldnn::_linear_pointwise` on weights it has not packed itself)."""
    return _linear_pointwise(x, weight, bias)


@onednn_op.register_fake
def _(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return x.new_empty(x.shape[0], weight.shape[0])


def _forward(module: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return onednn_linear(x, module.weight, module.bias)


@contextlib.contextmanager
def onednn_linears(model: torch.nn.Module) -> Iterator[None]:
    """Every `nn.Linear` of `model` (on a CPU, fp32 / bf16) computes through oneDNN for the block; the modules'
    own forward is back afterwards, whatever happens."""
    routed = []
    try:
        for m in model.modules():
            if type(m) is torch.nn.Linear and onednn_available(m.weight.device, m.weight.dtype):
                m.forward = types.MethodType(_forward, m)  # type: ignore[method-assign]  # instance override, undone below
                routed.append(m)
        yield
    finally:
        for m in routed:
            del m.forward
