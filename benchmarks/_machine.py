"""The machine reference every raw file records beside its figures, measured in the benchmark's own process, so that
absolute timings taken on different days (a shared VM runs host work several times slower on some days) can be
compared through it:
- `gemm`: GFLOP/s of a square fp32 `torch.mm` of side GEMM_SIDE on the benchmark's device (best and median of
  GEMM_REPEATS timed calls after one untimed call): the device's arithmetic;
- `host`: milliseconds to tokenise a fixed text set (every record of benchmarks/data/enem_long_pt.jsonl, its
  question and options, TEXT_COPIES times over; one batch call without any cache of ours) with the embedded Gemma
  tokenizer (best and median of HOST_REPEATS): the host's speed at the work the engine's host side does most;
- `commit`: the checkout's commit (`git rev-parse HEAD`) and whether it had uncommitted changes;
- `cpu`: the CPU (model name, its vector and matrix units, the kernels torch dispatches to, any instruction set
  forced down through the environment: backends.hf.compute.cpu), since timings and the low digits of scores
  depend on it.
A part that cannot be measured (no git, no embedded tokenizer) is null with the reason, never a guess.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TEXTS = REPO / "benchmarks" / "data" / "enem_long_pt.jsonl"
GEMM_SIDE = 2048
GEMM_REPEATS = 5
TEXT_COPIES = 8
HOST_REPEATS = 3
EMBEDDED_VOCAB = 262_144  # the embedded Gemma tokenizer's entries (Gemma 3's, with its added tokens)


def commit() -> dict[str, Any]:
    """{"sha", "dirty"} of the checkout the benchmark ran from; sha null (with the reason) outside a git checkout."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                                capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        return {"sha": None, "dirty": None, "error": f"{type(e).__name__}: {e}"}
    return {"sha": sha.stdout.strip(), "dirty": bool(status.stdout.strip())}


def texts() -> list[str]:
    """The fixed text set: each record's question and options, TEXT_COPIES times over."""
    out = []
    for line in TEXTS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            options = rec.get("alternatives") or rec.get("options") or []
            out.append("\n".join([rec.get("question", ""), *[str(o) for o in options]]))
    return out * TEXT_COPIES


def embedded_tokenizer() -> Any:
    """The embedded Gemma-3-270M's tokenizer, from its dequantised copy (made on first use, as load_model does)."""
    from transformers import AutoTokenizer

    from mcqa_toolkit.backends.hf.loading import DEFAULT_MODEL, dequantised_dir, embedded_gguf

    path, _ = dequantised_dir(embedded_gguf(DEFAULT_MODEL))
    return AutoTokenizer.from_pretrained(path)


def gemm(device: Any = "cpu", side: int = GEMM_SIDE, repeats: int = GEMM_REPEATS) -> dict[str, Any]:
    """GFLOP/s of `torch.mm` on two seeded fp32 (side x side) matrices on `device`: best and median."""
    import torch

    device = torch.device(device)
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(side, side, generator=gen).to(device) for _ in range(2))
    rates = []
    for k in range(repeats + 1):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        torch.mm(a, b)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if k:  # the first call is untimed (allocation, kernel selection)
            rates.append(2.0 * side ** 3 / (time.perf_counter() - t0) / 1e9)
    return {"side": side, "dtype": "float32", "device": device.type, "repeats": repeats,
            "best": max(rates), "median": statistics.median(rates)}


def host(tokenizer: Any = None, repeats: int = HOST_REPEATS) -> dict[str, Any]:
    """Milliseconds to tokenise the fixed text set in one batch call (best and median), with the vocabulary size of
    the tokenizer that did it (the embedded Gemma tokenizer's unless the caller's is the same one)."""
    tokenizer = tokenizer if tokenizer is not None else embedded_tokenizer()
    batch = texts()
    tokenizer(batch[:2])  # untimed: the first call builds the tokenizer's own state
    ms = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        tokenizer(batch)
        ms.append(1000 * (time.perf_counter() - t0))
    return {"texts": len(batch), "chars": sum(map(len, batch)), "vocab": len(tokenizer), "repeats": repeats,
            "best_ms": min(ms), "median_ms": statistics.median(ms)}


def _measured(fn: Any, *args: Any) -> dict[str, Any] | None:
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - recorded as what could not be measured, with why
        return {"error": f"{type(e).__name__}: {e}"}


def reference(device: Any = "cpu", tokenizer: Any = None) -> dict[str, Any]:
    """The machine reference (module docstring): {"commit", "gemm", "host"}. `tokenizer`: the benchmark's own
    when it is the embedded Gemma tokenizer (saves loading it again; its vocabulary size is recorded); any other is
    left aside and the embedded one loaded."""
    if tokenizer is not None and len(tokenizer) != EMBEDDED_VOCAB:
        tokenizer = None
    from mcqa_toolkit.backends.hf.compute import cpu

    return {"commit": commit(), "cpu": cpu(), "gemm": _measured(gemm, device), "host": _measured(host, tokenizer)}


def line(ref: dict[str, Any]) -> str:
    """The reference as one printed line."""
    c, g, h = ref["commit"], ref["gemm"], ref["host"]
    sha = "unknown" if not c.get("sha") else c["sha"][:12] + ("+changes" if c["dirty"] else "")
    mm = f"{g['best']:.0f} GFLOP/s ({g['side']}^3 fp32 on {g['device']})" if "best" in g else g["error"]
    tok = f"{h['best_ms']:.1f} ms ({h['texts']} texts, {h['chars']:,} chars)" if "best_ms" in h else h["error"]
    cpu = ref.get("cpu") or {}
    isa = (f"{cpu.get('model')} ({cpu.get('capability')} kernels"
           f"{', forced ' + str(cpu['forced']) if cpu.get('forced') else ''})")
    return f"machine reference: commit {sha}; CPU {isa}; torch.mm {mm}; tokenisation of the fixed text set {tok}"
