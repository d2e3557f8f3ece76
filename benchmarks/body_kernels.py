"""Which kernels make the model body fastest on this device, measured in one run, the variants interleaved.

The engine's per-device choice of linear kernel (backends/hf/budget.py, kernels.py) rests on this comparison: the
body (no LM head, no cache) forwarding seeded random ids in rows of 256 tokens and in rows of the workload's
prompt length, with
  eager     PyTorch's own kernels (MKL's GEMM for fp32 on a CPU),
  onednn    every nn.Linear through oneDNN (kernels.onednn_linears: the engine's CPU default),
  compiled  torch.compile (inductor, default mode, static shapes) of the eager body,
  compiled+onednn-op  both: oneDNN's linear through kernels.onednn_linears, which under the compiler is the opaque
            operator `mcqa::onednn_linear` that inductor calls as it is while fusing the element-wise work around it
            (the engine's fused body, backends/hf/fused.py; inductor cannot lower oneDNN's own op on weights it has
            not packed itself);
  onednn+compiled-norms  onednn, with each normalisation module (a class named ...RMSNorm / ...LayerNorm)
            compiled alone with dynamic shapes (one compiled forward per class, shared by its instances): the
            fusion that needs no change to the engine's attention or linears (6 of a Gemma 3 layer's ~8-op norms);
each variant first warmed up (its compile time recorded), then `--rounds` rounds of one timed call per variant and
shape, in turn. Printed and written (`--json`): per variant and shape, tokens/s median and best, the useful GFLOP/s
(2 x body parameters x tokens / s) at the best, and the largest |difference| of the hidden states from eager's on
two rows; the device's GEMM rates (_reference.gemm_rate) beside them. A variant that failed has `error` and null
rates.

    python benchmarks/body_kernels.py [--rounds 3] [--dtype bfloat16] [--variants eager onednn ...] [--json out.json]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time

import torch

from mcqa_toolkit.backends.hf import load_model
from mcqa_toolkit.backends.hf.kernels import onednn_linears

try:  # run as a script or as a module
    from _reference import device_facts, gemm_rate, model_flops
    from _results import write_json
except ModuleNotFoundError:
    from benchmarks._reference import device_facts, gemm_rate, model_flops
    from benchmarks._results import write_json

SHAPES = {"16x256": (16, 256), "3x1500": (3, 1500)}


_COMPILED_NORMS: dict[type, object] = {}


def _is_norm(module: torch.nn.Module) -> bool:
    return type(module).__name__.endswith(("RMSNorm", "LayerNorm"))


@contextlib.contextmanager
def compiled_norms(model: torch.nn.Module):
    """Every nn.Linear through oneDNN and every normalisation module through its class's compiled forward
    (torch.compile, dynamic shapes, made once per class) for the block."""
    import functools

    norms = [m for m in model.modules() if _is_norm(m)]
    try:
        for m in norms:
            fn = _COMPILED_NORMS.setdefault(type(m), torch.compile(type(m).forward, dynamic=True))
            m.forward = functools.partial(fn, m)
        with onednn_linears(model):
            yield
    finally:
        for m in norms:
            m.__dict__.pop("forward", None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    ap.add_argument("--dtype", default="float32", help="float32, bfloat16")
    ap.add_argument("--variants", nargs="+", default=None, help="a subset of the variants (default: all)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    load = {"before": os.getloadavg()[0]}
    lm = load_model(args.model, device="cpu", dtype=args.dtype)
    body = lm.model.base_model
    gen = torch.Generator().manual_seed(0)
    ids = {k: torch.randint(1000, 30000, shape, generator=gen) for k, shape in SHAPES.items()}
    compiled = [torch.compile(body, dynamic=False) for _ in range(2)]
    variants = {"eager": (body, None), "onednn": (body, onednn_linears), "compiled": (compiled[0], None),
                "compiled+onednn-op": (compiled[1], onednn_linears),
                "onednn+compiled-norms": (body, compiled_norms)}
    unknown = set(args.variants or ()) - set(variants)
    if unknown:
        ap.error(f"unknown variants {sorted(unknown)}: expected some of {', '.join(variants)}")
    variants = {k: v for k, v in variants.items() if args.variants is None or k in args.variants}

    def call(fn, route, x: torch.Tensor) -> torch.Tensor:
        with route(lm.model) if route else contextlib.nullcontext():
            return fn(input_ids=x, use_cache=False).last_hidden_state

    out: dict = {v: {"error": None, "warm_s": None, "max_diff_vs_eager": None} for v in variants}
    times: dict = {(v, s): [] for v in variants for s in SHAPES}
    with torch.inference_mode():
        ref = call(body, None, ids["16x256"][:2])
        for v, (fn, on) in variants.items():
            t0 = time.perf_counter()
            try:
                for x in ids.values():
                    call(fn, on, x)
                out[v]["max_diff_vs_eager"] = float((call(fn, on, ids["16x256"][:2]) - ref).abs().max())
                out[v]["warm_s"] = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001 - a variant that cannot run is a result, with its reason
                out[v]["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
            print(f"{v}: warm-up {time.perf_counter() - t0:.1f}s {out[v]['error'] or ''}", flush=True)
        live = {v: f for v, f in variants.items() if out[v]["error"] is None}
        for _ in range(args.rounds):
            for v, (fn, on) in live.items():
                for s, x in ids.items():
                    t0 = time.perf_counter()
                    call(fn, on, x)
                    times[v, s].append(time.perf_counter() - t0)
    for v in variants:
        for s, x in ids.items():
            ts = times[v, s]
            row = {"tok_s_median": x.numel() / statistics.median(ts), "tok_s_best": x.numel() / min(ts),
                   "useful_gflops_best": model_flops(lm.model, x.numel(), 0) / min(ts) / 1e9} if ts else \
                {"tok_s_median": None, "tok_s_best": None, "useful_gflops_best": None}
            out[v][s] = row
            if ts:
                print(f"{v:16s} {s}: {row['tok_s_median']:.0f} tok/s median, {row['tok_s_best']:.0f} best "
                      f"({row['useful_gflops_best']:.0f} GFLOP/s)", flush=True)
    gemm = gemm_rate("cpu", lm.dtype)
    load["after"] = os.getloadavg()[0]
    print(f"GEMM: torch.mm {gemm['torch_mm_gflops']['best']:.0f} GFLOP/s, oneDNN "
          f"{(gemm['onednn_gflops'] or {}).get('best', float('nan')):.0f} | 1-min load {load['before']:.2f} -> "
          f"{load['after']:.2f}")
    write_json(args.json, {"args": {**vars(args), "json": "JSON"}, "device": device_facts(lm), "load_1min": load,
                           "rounds": args.rounds, "gemm": gemm, "variants": out}, lm.device, lm.tokenizer)


if __name__ == "__main__":
    main()
