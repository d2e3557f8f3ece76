"""The process state a local model's numbers depend on: pinned by the engine for each scoring call, and recorded.

A model's fp32 scores depend on more than its weights and inputs. On a CPU, torch's kernels (oneDNN, MKL) may split
a sum over the threads, so the thread count can move scores past the equality rule's 1e-6; and the fp32 matmul
precision, a process-wide switch (`torch.set_float32_matmul_precision("medium")`, transformers' TF32 switch), lets
oneDNN round fp32 products to bf16 on a CPU with a bf16 unit (on the demo's items: 1.1e-5 on an AVX512_BF16 CPU,
nothing with the instruction set forced to AVX2) and CUDA use TF32. Anything that ran before in the process (a
notebook's earlier cells, a library that set a global, a Ray worker whose torch started with another thread count)
would then change the records. So the engine sets what it relies on for the duration of each scoring call
(`pinned`): its own thread count (`threads`, by default the process's when the engine was made) and IEEE fp32
products, and puts the process's settings back afterwards; `describe` says what was used, with the CPU's
instruction set (`cpu`), for the run's provenance.
"""
from __future__ import annotations

import contextlib
import functools
import os
import platform
from collections.abc import Iterator
from typing import Any

import torch

FP32 = "ieee"  # fp32 products in fp32 (no TF32, no bf16 rounding): what the engine's equality bound assumes
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_fp16", "asimd", "sve")
ISA_ENV = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
BF16_UNITS = ("amx_bf16", "avx512_bf16")  # the CPU units oneDNN computes bf16 products with, fastest first
X86 = ("x86_64", "AMD64")  # platform.machine() of the CPUs whose bf16 units BF16_UNITS names
BELOW_BF16 = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI")  # oneDNN ISAs


def _precision_backends(device: torch.device) -> list[Any]:
    """The torch.backends.* matmul settings that decide fp32 products on `device` (oneDNN's always: the CPU side
    of any run; CUDA's on a GPU)."""
    out = [torch.backends.mkldnn.matmul]  # type: ignore[attr-defined]  # set at import; torch's stubs lack it
    if device.type == "cuda":
        out.append(torch.backends.cuda.matmul)
    return out


@contextlib.contextmanager
def pinned(threads: int | None, device: Any, dtype: torch.dtype) -> Iterator[None]:
    """For the block: `threads` torch threads (None: as they are) and, for fp32 weights, IEEE fp32 matrix products;
    the process's own settings back afterwards, whatever happens."""
    device = torch.device(device)
    before_threads = torch.get_num_threads()
    saved = [(b, b.fp32_precision) for b in _precision_backends(device)] if dtype == torch.float32 else []
    try:
        if threads and threads != before_threads:
            torch.set_num_threads(threads)
        for b, _ in saved:
            b.fp32_precision = FP32
        yield
    finally:
        for b, value in saved:
            b.fp32_precision = value
        if torch.get_num_threads() != before_threads:
            torch.set_num_threads(before_threads)


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> tuple[str | None, tuple[str, ...]]:
    """The CPU's model name and its flags among ISA_FLAGS (Linux's /proc/cpuinfo; elsewhere the platform's name)."""
    try:
        text = open("/proc/cpuinfo", encoding="utf-8", errors="replace").read()
    except OSError:
        return platform.processor() or None, ()
    name: str | None = None
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model") and name is None:
            name = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    return name, tuple(f for f in ISA_FLAGS if f in flags)


def cpu() -> dict[str, Any]:
    """The CPU the process computes on: model name, its vector and matrix units (ISA_FLAGS it has), the kernels torch
    dispatches to (`capability`: ATen's CPU capability, which ATEN_CPU_CAPABILITY can force down) and the
    environment variables that force an instruction set down, where set."""
    name, flags = _cpuinfo()
    return {"model": name, "flags": list(flags), "capability": torch.backends.cpu.get_cpu_capability(),
            "forced": {k: os.environ[k] for k in ISA_ENV if k in os.environ}, "machine": platform.machine()}


def bf16_unit() -> str | None:
    """The bf16 matrix unit this process's oneDNN computes bf16 products with (`BF16_UNITS`), or None: the CPU has
    none, oneDNN has no bf16 inner product here, or its instruction set is forced below bf16 (ONEDNN_MAX_CPU_ISA /
    DNNL_MAX_CPU_ISA). Why: without one bf16 products are emulated, so bf16 gives up fp32's exactness for no speed."""
    from mcqa_toolkit.backends.hf.kernels import onednn_available

    _, flags = _cpuinfo()
    units = [u for u in BF16_UNITS if u in flags]
    forced = {os.environ.get(k, "").upper() for k in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")}
    if not units or forced & set(BELOW_BF16) or not onednn_available("cpu", torch.bfloat16):
        return None
    return units[-1] if "AVX512_CORE_BF16" in forced else units[0]


def bf16_emulated() -> bool:
    """Whether bf16 products would be emulated here: an x86 CPU without a `bf16_unit` (another CPU's bf16 units are
    not named in BF16_UNITS, so there it is not known: False)."""
    return platform.machine() in X86 and bf16_unit() is None


def describe(threads: int | None, device: Any, dtype: torch.dtype) -> dict[str, Any]:
    """What a scoring call computes with (provenance): threads, the fp32 product precision, the CPU."""
    return {"threads": threads or torch.get_num_threads(),
            "fp32_matmul": FP32 if dtype == torch.float32 else None, "cpu": cpu()}
