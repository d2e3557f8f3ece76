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
import torch

from mcqa_toolkit.datasets import load
from mcqa_toolkit.models import load_model
from mcqa_toolkit.prompts import load_template, render, select_shots, split_shots
from mcqa_toolkit.scoring.encode import context_continuation, encode, next_token_candidates, prompt_text
from mcqa_toolkit.scoring.encode import shared_prefix_ids
from mcqa_toolkit.scoring.prefix import PrefixScorer, Request, naive_scores
from mcqa_toolkit.shuffle import permutations


def build(lm, items, pool, args, method):
    """Per item: its requests and the shared-prefix ids (both methods use the same rendered prompts)."""
    out, previous = [], ()
    for it in items:
        template = load_template(it.language, args.style)
        shots = select_shots(pool, it, args.shots, "easiest") if args.shots else []
        prompts = [render(it, template, shots=shots, permutation=p, shuffle=k)
                   for k, p in enumerate(permutations(it.n_options, args.shuffles, seed=0, key=it.parallel_id))]
        shared = shared_prefix_ids(lm, prompts[0], previous)
        previous = shared or previous
        reqs = []
        for p in prompts:
            text, special = prompt_text(lm, p)
            if method == "first_token":
                ids = encode(lm, text, special)
                cands, _ = next_token_candidates(lm, ids, text, p.letter_continuations, special)
                reqs.append(Request(ids, len(ids), cands))
            else:
                for cont in p.continuations:
                    ctx, c = context_continuation(lm, text, cont, special)
                    reqs.append(Request(ctx + c, len(ctx)))
        out.append((reqs, shared))
    return out


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
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--dataset", default="demo")
    ap.add_argument("--language", default="pt")
    ap.add_argument("--style", default="enem")
    ap.add_argument("--items", type=int, default=8)
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--shuffles", type=int, default=30)
    ap.add_argument("--naive-items", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    lm = load_model(args.model, device="cpu", dtype="float32")
    items = load(args.dataset, language=args.language) if args.dataset == "demo" else load(args.dataset)
    pool, evaluated = split_shots(items, args.shots, "easiest") if args.shots else (items, items)
    evaluated = evaluated[: args.items]
    print(f"model={lm.name} dataset={args.dataset}:{args.language} items={len(evaluated)} shots={args.shots} "
          f"shuffles={args.shuffles} torch_threads={torch.get_num_threads()}")
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
