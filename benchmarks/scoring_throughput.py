"""Scoring throughput: naive full-prompt forwards vs the KV-prefix engine, measured in one run.

Workloads (ENEM-paper protocol on the demo exam, or any dataset given): k-shot x N-shuffle first-token letter
scoring, and option log-likelihood scoring over the same prompts. The naive path forwards every sequence alone
with full-vocabulary logits (what a plain loop, or lm-eval's HF backend per request, does); it is slow, so it is
timed on the first `--naive-items` items and compared per item. The same items' log-probs are compared for
equality (max |delta|) and identical choices.

    python benchmarks/scoring_throughput.py --items 8 --shots 4 --shuffles 30 --naive-items 2
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores

try:  # run as a script (python benchmarks/scoring_throughput.py) or as a module (python -m benchmarks...)
    from _workload import add_arguments, build, setup
except ModuleNotFoundError:
    from benchmarks._workload import add_arguments, build, setup


def bench(lm, work, naive_items):
    scorer = PrefixScorer(lm)
    t0 = time.perf_counter()
    shared_res = [scorer.score(reqs, shared) for reqs, shared in work]
    t_shared = time.perf_counter() - t0
    t0 = time.perf_counter()
    naive_res = [naive_scores(lm, reqs) for reqs, _ in work[:naive_items]]
    t_naive = time.perf_counter() - t0
    delta, same = 0.0, True
    for got, ref in zip(shared_res, naive_res):
        delta = max(delta, max(float(np.abs(a - b).max()) for a, b in zip(got, ref)))
        same &= all(int(np.argmax(a)) == int(np.argmax(b)) for a, b in zip(got, ref) if a.size > 1)
    st = scorer.stats
    rate_shared = len(work) / t_shared
    rate_naive = naive_items / t_naive
    return {"items": len(work), "sequences": sum(len(r) for r, _ in work), "tokens_naive": st.naive,
            "tokens_forwarded": st.forwarded, "tokens_unique": st.unique, "padded": st.padded,
            "shared_s": t_shared, "naive_s": t_naive, "items_per_s_shared": rate_shared,
            "items_per_s_naive": rate_naive, "speedup": rate_shared / rate_naive, "max_delta": delta,
            "same_choices": same, "tokens_ratio": st.forwarded / st.unique}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=8, shuffles=30)
    ap.add_argument("--naive-items", type=int, default=2)
    args = ap.parse_args()
    lm, pool, evaluated = setup(args)
    results = {}
    for method in ("first_token", "loglik"):
        r = bench(lm, build(lm, evaluated, pool, args, method), min(args.naive_items, len(evaluated)))
        results[method] = r
        print(f"[{method}] sequences={r['sequences']} tokens naive={r['tokens_naive']} forwarded="
              f"{r['tokens_forwarded']} unique={r['tokens_unique']} padded={r['padded']} | shared {r['shared_s']:.1f}s"
              f" ({r['items_per_s_shared']:.3f} items/s) naive {r['naive_s']:.1f}s on {args.naive_items} items "
              f"({r['items_per_s_naive']:.4f} items/s) | speedup {r['speedup']:.1f}x max_delta {r['max_delta']:.2e} "
              f"same_choices={r['same_choices']} tokens_ratio={r['tokens_ratio']:.3f}")
    ft = results["first_token"]
    print(f"RESULT speedup_vs_naive={ft['speedup']:.1f} speedup_vs_lm_eval=see_vs_lm_eval.py "
          f"max_delta={max(r['max_delta'] for r in results.values()):.2e} tokens_ratio={ft['tokens_ratio']:.3f}")


if __name__ == "__main__":
    main()
