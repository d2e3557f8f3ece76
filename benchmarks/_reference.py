"""What the scoring benchmarks measure our engine against, each named for what it is.

Three references, all measured in the benchmark's own run (never typed in), none of them a bound:
- `body_rate`: tokens/s of the model body (no LM head, no cache, no masks of ours) forwarding seeded random ids in
  rows of a given length, with the engine's linear kernel (`linear` in the JSON), best / median / min / max over
  `repeats` timed calls. Two shapes are reported: rows of the workload's mean prompt length over as many tokens as
  the engine's unique tokens (`body_full_rows`: dense causal attention over the whole prompt, which the engine
  does not pay for its cached prefix), and rows of `SHORT_ROW`
  tokens (`body_short_rows`: attention nearly free, the rate of the body's other work). The engine's unique
  tokens/s over each is `vs_body_full_rows` / `vs_body_short_rows` (with the ratio's range over the repeats).
- `gemm_rate`: the device's measured dense matrix-product rate in the run's dtype: best of `repeats` square
  `torch.mm` of side `GEMM_SIDE` (what eager PyTorch's linear layers call), and on a CPU also oneDNN's packed-weight
  product (`torch.ops.mkldnn._linear_pointwise`, the engine's CPU linear kernel) on the same sizes, since the two
  differ by 2-2.5x on the reference machine (MKL's fp32 GEMM takes its AVX2 path on this AMD CPU, oneDNN AVX-512).
  The engine's useful FLOP rate (`model_flops` of its unique tokens and scored positions per second) is reported
  against both (`useful_vs_torch_mm`, `useful_vs_onednn`).
- on a GPU, `mfu`: the useful FLOP rate over the detected device's datasheet peak for the dtype (`DATASHEET_TFLOPS`,
  dense, without sparsity; null for a device or dtype not in the table, never a guess).
"""
from __future__ import annotations

import contextlib
import math
import platform
import statistics
import time
from typing import Any

import torch

from mcqa_toolkit.backends.hf.kernels import onednn_linears

SHORT_ROW = 256          # row length of the short-row reference
SHORT_ROW_TOKENS = 4096  # its token count: enough for a steady rate, short on a shared machine
GEMM_SIDE = 4096         # square matrix side of the GEMM reference (large enough for a steady rate)

# dense tensor-core peaks from the vendors' datasheets, TFLOP/s (without 2:4 sparsity), keyed by the device name
# torch.cuda.get_device_name reports and the dtype
DATASHEET_TFLOPS: dict[tuple[str, str], tuple[float, str]] = {
    ("NVIDIA H100 80GB HBM3", "bfloat16"): (989.4, "H100 SXM5 datasheet, dense BF16"),
    ("NVIDIA H100 80GB HBM3", "float16"): (989.4, "H100 SXM5 datasheet, dense FP16"),
    ("NVIDIA H100 PCIe", "bfloat16"): (756.5, "H100 PCIe datasheet, dense BF16"),
    ("NVIDIA H100 PCIe", "float16"): (756.5, "H100 PCIe datasheet, dense FP16"),
    ("NVIDIA H200", "bfloat16"): (989.4, "H200 SXM datasheet, dense BF16"),
    ("NVIDIA H200", "float16"): (989.4, "H200 SXM datasheet, dense FP16"),
    ("NVIDIA A100-SXM4-80GB", "bfloat16"): (312.0, "A100 SXM datasheet, dense BF16"),
    ("NVIDIA A100-SXM4-80GB", "float16"): (312.0, "A100 SXM datasheet, dense FP16"),
}


def sync(device: torch.device) -> None:
    """Wait for queued GPU work, so a timer around it measures the work (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _spread(rates: list[float]) -> dict[str, float]:
    return {"best": max(rates), "median": statistics.median(rates), "min": min(rates), "max": max(rates)}


def _timed(fn: Any, device: torch.device, repeats: int) -> list[float]:
    """Seconds of `repeats` calls of `fn` after one untimed call."""
    fn()
    out = []
    for _ in range(repeats):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        out.append(time.perf_counter() - t0)
    return out


@torch.inference_mode()
def body_rate(lm: Any, n_tokens: int, row_len: int, repeats: int = 3, linear: str = "torch") -> dict[str, Any]:
    """The model body's tokens/s over ~n_tokens in rows of ~row_len (seeded random ids: speed does not depend on
    which tokens): best, median, min and max over `repeats` timed calls, and the shape. `linear`: the linear kernel
    the body computes with, the engine's choice ("onednn": kernels.onednn_linears; "torch": PyTorch's), so that the
    engine is compared with its own kernels and the ratio measures its rows and attention, not the kernel."""
    row_len = max(1, min(row_len, n_tokens))
    rows = max(1, round(n_tokens / row_len))
    length = math.ceil(n_tokens / rows)
    gen = torch.Generator().manual_seed(0)
    vocab = lm.model.config.vocab_size
    ids = torch.randint(min(1000, vocab // 2), min(vocab, 30000), (rows, length), generator=gen).to(lm.device)
    body = lm.model.base_model
    route = onednn_linears(lm.model) if linear == "onednn" else contextlib.nullcontext()
    with route:
        seconds = _timed(lambda: body(input_ids=ids, use_cache=False), ids.device, repeats)
    return {"tok_s": _spread([rows * length / s for s in seconds]), "rows": rows, "length": length, "repeats": repeats,
            "linear": linear}


def vs(rate: float, reference: dict[str, Any]) -> dict[str, float]:
    """`rate` over a `body_rate` reference: against its best repeat, and the range over its repeats."""
    tok_s = reference["tok_s"]
    return {"vs_best": rate / tok_s["best"], "vs_min": rate / tok_s["max"], "vs_max": rate / tok_s["min"]}


@torch.inference_mode()
def gemm_rate(device: Any, dtype: torch.dtype, repeats: int = 5, side: int = GEMM_SIDE) -> dict[str, Any]:
    """GFLOP/s of square products of side `side` in `dtype` on `device`: `torch.mm`, and on a CPU oneDNN's
    packed-weight linear (None where it is not available); best and median over `repeats`."""
    device = torch.device(device)
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(side, side, generator=gen).to(device=device, dtype=dtype)
    b = torch.randn(side, side, generator=gen).to(device=device, dtype=dtype)
    flops = 2.0 * side ** 3
    out: dict[str, Any] = {"side": side, "repeats": repeats, "dtype": str(dtype).removeprefix("torch.")}
    rates = [flops / s / 1e9 for s in _timed(lambda: torch.mm(a, b), device, repeats)]
    out["torch_mm_gflops"] = {"best": max(rates), "median": statistics.median(rates)}
    out["onednn_gflops"] = None
    if device.type == "cpu" and torch.backends.mkldnn.is_available():
        packed = torch.ops.mkldnn._reorder_linear_weight(b, side)
        rates = [flops / s / 1e9 for s in _timed(
            lambda: torch.ops.mkldnn._linear_pointwise(a, packed, None, "none", [], ""), device, repeats)]
        out["onednn_gflops"] = {"best": max(rates), "median": statistics.median(rates)}
    return out


def model_flops(model: Any, tokens: int, head_positions: int) -> float:
    """Matrix-product FLOPs of forwarding `tokens` through the body and `head_positions` through the LM head:
    2 x parameters per token (attention's score/value products excluded: ~5% at 1.5k tokens for 8B shapes, so
    the useful rate here is a slight underestimate)."""
    emb = model.get_input_embeddings().weight
    body = sum(p.numel() for p in model.base_model.parameters() if p is not emb and p.dim() > 1)
    return 2.0 * body * tokens + 2.0 * model.get_output_embeddings().weight.numel() * head_positions


def useful_rate(lm: Any, stats: Any, seconds: float, gemm: dict[str, Any] | None) -> dict[str, Any]:
    """The engine's useful GFLOP/s (`model_flops` of its unique tokens and scored positions per second) and its
    ratio to the measured GEMM rates and, on a GPU, to the datasheet peak (MFU); null where nothing was compared."""
    gflops = model_flops(lm.model, stats.unique, stats.scored_positions) / seconds / 1e9
    out: dict[str, Any] = {"useful_gflops": gflops, "useful_vs_torch_mm": None, "useful_vs_onednn": None,
                           "mfu": None, "peak_tflops": None, "peak_source": None}
    if gemm is not None:
        out["useful_vs_torch_mm"] = gflops / gemm["torch_mm_gflops"]["best"]
        if gemm.get("onednn_gflops"):
            out["useful_vs_onednn"] = gflops / gemm["onednn_gflops"]["best"]
    peak = datasheet_peak(lm)
    if peak is not None:
        out.update(mfu=gflops / 1e3 / peak[0], peak_tflops=peak[0], peak_source=peak[1])
    return out


def engine_references(lm: Any, stats: Any, seconds: float, mean_len: float, repeats: int,
                      gemm: dict[str, Any] | None, linear: str = "torch") -> dict[str, Any]:
    """The engine's unique tokens/s against the body references (computed with the engine's `linear` kernel) and
    its useful FLOP rate against the GEMM rate (the JSON fields the module docstring names)."""
    rate = stats.unique / seconds
    full = body_rate(lm, stats.unique, round(mean_len), repeats, linear)
    short = body_rate(lm, min(stats.unique, SHORT_ROW_TOKENS), SHORT_ROW, repeats, linear)
    return {"unique_tok_s": rate, "body_full_rows": full, "vs_body_full_rows": vs(rate, full),
            "body_short_rows": short, "vs_body_short_rows": vs(rate, short), **useful_rate(lm, stats, seconds, gemm)}


def references_line(r: dict[str, Any]) -> str:
    """The engine against the references, one line."""
    full, short = r["body_full_rows"], r["body_short_rows"]
    out = (f"ours {r['unique_tok_s']:.0f} unique tok/s | body {full['tok_s']['best']:.0f} tok/s on {full['rows']}x"
           f"{full['length']} rows (vs {r['vs_body_full_rows']['vs_best']:.2f}, {r['vs_body_full_rows']['vs_min']:.2f}"
           f"-{r['vs_body_full_rows']['vs_max']:.2f} over repeats), {short['tok_s']['best']:.0f} tok/s on "
           f"{short['rows']}x{short['length']} rows (vs {r['vs_body_short_rows']['vs_best']:.2f}) | useful "
           f"{r['useful_gflops']:.0f} GFLOP/s = {r['useful_vs_torch_mm']:.2f} of torch.mm")
    if r["useful_vs_onednn"] is not None:
        out += f", {r['useful_vs_onednn']:.2f} of oneDNN"
    if r["mfu"] is not None:
        out += f" | MFU {r['mfu']:.3f} of {r['peak_tflops']:.0f} TFLOP/s ({r['peak_source']})"
    if r.get("body_tok_s") is not None:  # scoring_throughput.py times the body's calls; vs_lm_eval.py does not
        out += f" | inside the body's calls {r['body_tok_s']:.0f} forwarded tok/s"
    return out


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what `platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def datasheet_peak(lm: Any) -> tuple[float, str] | None:
    """(dense TFLOP/s, source) of the model's GPU in its dtype, from DATASHEET_TFLOPS; None on a CPU or for a
    device / dtype the table does not hold."""
    if lm.device.type != "cuda":
        return None
    return DATASHEET_TFLOPS.get((torch.cuda.get_device_name(lm.device), str(lm.dtype).removeprefix("torch.")))


def device_facts(lm: Any, **versions: str) -> dict[str, Any]:
    """Where a benchmark ran: device name, dtype, torch threads, torch / transformers / CUDA versions."""
    import transformers

    name = torch.cuda.get_device_name(lm.device) if lm.device.type == "cuda" else cpu_name()
    out = {"device": name, "dtype": str(lm.dtype).removeprefix("torch."), "model": lm.name,
           "attention": lm.model.config._attn_implementation, "torch": torch.__version__,
           "torch_threads": torch.get_num_threads(), "transformers": transformers.__version__,
           "cuda": None if torch.version.cuda is None else str(torch.version.cuda), "python": platform.python_version()}
    return {**out, **versions}
