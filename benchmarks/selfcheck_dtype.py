"""How far each engine path is from the plain forward in a half dtype, and what the self-check keeps there: the
embedded Gemma-3-270M (or --model) in --dtype and its float32 twin, on the self-check's own probe: the dtype's plain
forward against float32's, each path in the dtype against the dtype's plain forward and against float32's, each
path on the twin against the twin's plain forward; then the verdict with the twin and without room for it, timed.
The numbers behind selfcheck.HALF_RATIO.

    python benchmarks/selfcheck_dtype.py --json results/benchmarks/engine6_DATE/selfcheck_bfloat16.json
"""
from __future__ import annotations

import argparse
import datetime
import time

import numpy as np
import torch

from mcqa_toolkit.backends.hf import load_model, selfcheck, twin
from mcqa_toolkit.backends.hf.engine import PrefixScorer

try:
    from _results import write_json
except ModuleNotFoundError:
    from benchmarks._results import write_json


def _answers(lm, path: str) -> list[np.ndarray]:
    engine = PrefixScorer(lm, check=False)
    run, letters, options = selfcheck.probe(lm, 2 if engine.items_per_call > 1 else 1)
    return selfcheck._answers(engine, path, run, letters, options)


def _verdict(lm, room: bool) -> dict:
    share = twin.FREE_SHARE
    twin.FREE_SHARE = share if room else 0.0
    try:
        t0 = time.perf_counter()
        v = selfcheck.check(PrefixScorer(lm, check=False))
        return {**v.to_dict(), "seconds": round(time.perf_counter() - t0, 2)}
    finally:
        twin.FREE_SHARE = share


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    lm = load_model(args.model, device="cpu", dtype=args.dtype)
    t0 = time.perf_counter()
    lm32 = twin.float32(lm)
    twin_seconds = time.perf_counter() - t0
    assert lm32 is not None, "the float32 twin does not fit in this machine's free memory"
    fp32_plain, half_plain = _answers(lm32, "plain"), _answers(lm, "plain")
    plain_distance = selfcheck._delta(half_plain, fp32_plain)
    paths = {}
    for path in selfcheck.PATHS[:-1]:
        half, fp32 = _answers(lm, path), _answers(lm32, path)
        paths[path] = {"dtype_vs_dtype_plain": selfcheck._delta(half, half_plain),
                       "dtype_vs_fp32_plain": selfcheck._delta(half, fp32_plain),
                       "ratio_to_dtype_plain": round(selfcheck._delta(half, fp32_plain) / plain_distance, 3),
                       "twin_vs_twin_plain": selfcheck._delta(fp32, fp32_plain)}
        print(path, paths[path], flush=True)
    result = {"date": datetime.date.today().isoformat(), "model": args.model, "dtype": args.dtype,
              "threads": torch.get_num_threads(), "probe_tokens": len(selfcheck.probe(lm)[0]),
              "largest_abs_logprob": max(float(np.abs(x).max()) for x in fp32_plain),
              "twin_seconds": round(twin_seconds, 2), "dtype_plain_vs_fp32_plain": plain_distance,
              "paths": paths, "half_ratio": selfcheck.HALF_RATIO,
              "verdict_with_twin": _verdict(lm, True), "verdict_without_twin": _verdict(lm, False)}
    print({k: result[k] for k in ("dtype_plain_vs_fp32_plain", "largest_abs_logprob", "twin_seconds")})
    write_json(args.json, result, lm.device, lm.tokenizer)


if __name__ == "__main__":
    main()
