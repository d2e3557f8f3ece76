"""Scoring throughput: naive full-prompt forwards vs the KV-prefix engine vs the machine's raw forward limit,
measured in one run.

Workload (see _workload.py): by default `enem-long`, real-length ENEM prompts (4 shots, ~1,500 tokens), N
seeded option shuffles per item; `--workload exam --dataset ...` takes any exam the loaders read. Per scoring
(`--scorings letters|options|both`): the engine scores every item, in blocks of `items_per_call` items as the
runner brings them (`--budget cpu|cuda`, `--items-per-call`, `--max-batch-tokens`, `--max-batch-rows`; default:
the device's budget, engine.BUDGETS), time including rendering and tokenising; forward calls per item are
printed (`calls_per_item`, the run prefix's call included);
the naive path forwards every sequence alone with full-vocabulary logits (what a plain loop, or lm-eval's HF
backend per request, does), timed on the first `--naive-items` items and compared per item, and the same
items' log-probs are compared for equality (max |delta|) and identical choices. The raw limit is one plain
batched forward of the model body over our unique token count (_limit.py); frac_of_limit = our unique
tokens/s over it.

    python benchmarks/scoring_throughput.py [--items 8] [--shuffles 30] [--naive-items 1] [--scorings both]
        [--budget cuda] [--json out.json]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores

try:  # run as a script (python benchmarks/scoring_throughput.py) or as a module (python -m benchmarks...)
    from _limit import SHORT_ROW, SHORT_ROW_TOKENS, raw_forward_rate
    from _results import write_json
    from _workload import SCORINGS, add_arguments, blocks, build, engine_options, scorings, setup
except ModuleNotFoundError:
    from benchmarks._limit import SHORT_ROW, SHORT_ROW_TOKENS, raw_forward_rate
    from benchmarks._results import write_json
    from benchmarks._workload import SCORINGS, add_arguments, blocks, build, engine_options, scorings, setup


def bench(lm, pool, evaluated, args, method, naive_items):
    scorer = PrefixScorer(lm, **engine_options(args))
    t_ours, work, got = 0.0, [], []
    for block in blocks(list(evaluated), scorer.items_per_call):
        t0 = time.perf_counter()
        built = build(lm, block, pool, args, method)
        got += scorer.score_block(built)
        t_ours += time.perf_counter() - t0
        work += [reqs for reqs, _ in built]
    t0 = time.perf_counter()
    naive_res = [naive_scores(lm, reqs) for reqs in work[:naive_items]]
    t_naive = time.perf_counter() - t0
    delta, same = (0.0, True) if naive_items else (None, None)  # nothing compared: null, not "equal"
    for mine, ref in zip(got, naive_res):
        delta = max(delta, max(float(np.abs(a - b).max()) for a, b in zip(mine, ref)))
        same &= all(int(np.argmax(a)) == int(np.argmax(b)) for a, b in zip(mine, ref) if a.size > 1)
    st = scorer.stats
    mean_len = float(np.mean([len(r.tokens) for reqs in work for r in reqs]))
    limit, shape = raw_forward_rate(lm, st.unique, round(mean_len))
    short, _ = raw_forward_rate(lm, min(st.unique, SHORT_ROW_TOKENS), SHORT_ROW)
    s_ours, s_naive = t_ours / len(work), t_naive / max(naive_items, 1)
    return {"items": len(work), "sequences": sum(len(r) for r in work), "tokens_naive": st.naive,
            "tokens_forwarded": st.forwarded, "tokens_unique": st.unique, "padded": st.padded, "calls": st.calls,
            "mean_len": mean_len, "ours_s": t_ours, "naive_s": t_naive if naive_items else None,
            "s_per_item_ours": s_ours, "s_per_item_naive": s_naive if naive_items else None,
            "speedup": s_naive / s_ours if naive_items else None, "max_delta": delta, "same_choices": same,
            "tokens_ratio": st.forwarded / st.unique, "ours_tok_s": st.unique / t_ours, "limit_tok_s": limit,
            "limit_shape": shape, "frac_of_limit": st.unique / t_ours / limit, "short_tok_s": short,
            "frac_of_short_rows": st.unique / t_ours / short, "calls_per_item": st.calls / len(work),
            "items_per_call": scorer.items_per_call, "max_batch_tokens": scorer.max_batch_tokens,
            "max_batch_rows": scorer.max_batch_rows}


def _n(x: float | None, spec: str) -> str:
    """A figure as printed; n/a for one that compared nothing."""
    return "n/a" if x is None else format(x, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=8, shuffles=30)
    ap.add_argument("--naive-items", type=int, default=1)
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args()
    lm, pool, evaluated = setup(args)
    results = {}
    for scoring in scorings(args):
        r = bench(lm, pool, evaluated, args, SCORINGS[scoring], min(args.naive_items, len(evaluated)))
        results[scoring] = r
        print(f"[{scoring}] sequences={r['sequences']} mean_len={r['mean_len']:.0f} tokens naive={r['tokens_naive']} "
              f"forwarded={r['tokens_forwarded']} unique={r['tokens_unique']} padded={r['padded']} "
              f"calls={r['calls']} calls_per_item={r['calls_per_item']:.2f} (items_per_call={r['items_per_call']} "
              f"max_batch_tokens={r['max_batch_tokens']} max_batch_rows={r['max_batch_rows']}) | ours {r['ours_s']:.1f}s ({r['s_per_item_ours']:.2f} s/item) naive "
              f"{_n(r['naive_s'], '.1f')}s on {args.naive_items} items ({_n(r['s_per_item_naive'], '.1f')} s/item) | "
              f"speedup {_n(r['speedup'], '.1f')}x max_delta {_n(r['max_delta'], '.2e')} "
              f"same_choices={r['same_choices']} tokens_ratio="
              f"{r['tokens_ratio']:.3f} | ours {r['ours_tok_s']:.0f} unique tok/s, raw forward "
              f"{r['limit_tok_s']:.0f} tok/s ({r['limit_shape'][0]}x{r['limit_shape'][1]}) frac_of_limit "
              f"{r['frac_of_limit']:.2f} | body on {SHORT_ROW}-token rows {r['short_tok_s']:.0f} tok/s "
              f"frac_of_short_rows {r['frac_of_short_rows']:.2f}", flush=True)
    head = results.get("letters") or next(iter(results.values()))
    deltas = [r["max_delta"] for r in results.values() if r["max_delta"] is not None]
    sames = [r["same_choices"] for r in results.values() if r["same_choices"] is not None]
    print(f"RESULT speedup_vs_naive={_n(head['speedup'], '.1f')} speedup_vs_lm_eval=see_vs_lm_eval.py "
          f"max_delta={_n(max(deltas) if deltas else None, '.2e')} tokens_ratio={head['tokens_ratio']:.3f} "
          f"frac_of_limit={head['frac_of_limit']:.2f} same_choices={all(sames) if sames else None} "
          f"calls_per_item={head['calls_per_item']:.2f}")
    write_json(args.json, {"args": vars(args), "results": results})


if __name__ == "__main__":
    main()
