"""Scoring throughput: naive full-prompt forwards vs the KV-prefix engine, and the engine against the references of
_reference.py (the model body's plain forward rate, the device's GEMM rate), measured in one run.

Workload (see _workload.py): by default `enem-long`, real-length ENEM prompts (4 shots, ~1,500 tokens), N
seeded option shuffles per item; `--workload exam --dataset ...` takes any exam the loaders read. Per scoring
(`--scorings letters|options|both`): the engine scores every item, in blocks of `items_per_call` items as the
runner brings them (`--budget cpu|cuda`, `--items-per-call`, `--max-batch-tokens`, `--max-batch-rows`; default:
the device's budget, engine.BUDGETS), time including rendering and tokenising; forward calls per item are
printed (`calls_per_item`, the run prefix's call included);
the naive path forwards every sequence alone with full-vocabulary logits (what a plain loop, or lm-eval's HF
backend per request, does), timed on the first `--naive-items` items and compared per item, and the same
items' log-probs are compared for equality (max |delta|) and identical choices (`--naive-items 0`: nothing is
compared, and the JSON says null). `speedup` sets the naive path's seconds per item against ours over all items;
`speedup_same_items` against ours on the naive path's own items (the run's first blocks, warm-up included). References
(_reference.py, `--repeats` timed calls each): the body's plain forward on rows of the workload's mean prompt length
(`body_full_rows`) and on 256-token rows (`body_short_rows`), our unique tokens/s over each (`vs_body_full_rows`,
`vs_body_short_rows`: against the best repeat, with the range over repeats), the useful FLOP rate against the device's
GEMM rate (`gemm`, once per run) and, on a GPU, the datasheet MFU. `body_seconds` is the time inside the engine's
forward calls of the body (host time on a GPU), `body_tok_s` = forwarded tokens over it.

    python benchmarks/scoring_throughput.py [--items 8] [--shuffles 30] [--naive-items 1] [--scorings both]
        [--budget cuda] [--repeats 3] [--json out.json]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores
from mcqa_toolkit.backends.hf.segments import TokenCache

try:  # run as a script (python benchmarks/scoring_throughput.py) or as a module (python -m benchmarks...)
    from _reference import device_facts, engine_references, gemm_rate, references_line
    from _results import write_json
    from _workload import SCORINGS, add_arguments, blocks, build, engine_options, scorings, setup
except ModuleNotFoundError:
    from benchmarks._reference import device_facts, engine_references, gemm_rate, references_line
    from benchmarks._results import write_json
    from benchmarks._workload import SCORINGS, add_arguments, blocks, build, engine_options, scorings, setup


def _same_items(per_block: list[tuple[int, float]], naive_items: int, t_naive: float) -> dict:
    """Ours on the very items the naive path was timed on (the run's first blocks, which hold the run's warm-up):
    their seconds and the speed-up on them; null when nothing was compared or no block boundary falls there."""
    done, seconds = 0, 0.0
    for n, t in per_block:
        if done >= naive_items:
            break
        done, seconds = done + n, seconds + t
    if not naive_items or done != naive_items:
        return {"ours_s_naive_items": None, "speedup_same_items": None}
    return {"ours_s_naive_items": seconds, "speedup_same_items": t_naive / seconds}


def bench(lm, pool, evaluated, args, method, naive_items, gemm):
    scorer = PrefixScorer(lm, **engine_options(args))
    cache = TokenCache(lm.tokenizer)  # a run's, as HFBackend keeps one
    t_ours, work, got, per_block = 0.0, [], [], []
    for block in blocks(list(evaluated), scorer.items_per_call):
        t0 = time.perf_counter()
        built = build(lm, block, pool, args, method, cache)
        got += scorer.score_block(built)
        per_block.append((len(built), time.perf_counter() - t0))
        t_ours += per_block[-1][1]
        work += [reqs for reqs, _ in built]
    t0 = time.perf_counter()
    naive_res = [naive_scores(lm, reqs) for reqs in work[:naive_items]]
    t_naive = time.perf_counter() - t0
    delta, same = (0.0, True) if naive_res else (None, None)  # nothing compared: null in the JSON
    for mine, ref in zip(got[:naive_items], naive_res, strict=True):  # the naive path scored the first items only
        delta = max(delta, max(float(np.abs(a - b).max()) for a, b in zip(mine, ref, strict=True)))
        same &= all(int(np.argmax(a)) == int(np.argmax(b)) for a, b in zip(mine, ref, strict=True) if a.size > 1)
    st = scorer.stats
    mean_len = float(np.mean([len(r.tokens) for reqs in work for r in reqs]))
    s_ours = t_ours / len(work)
    s_naive = t_naive / naive_items if naive_items else None
    return {"items": len(work), "sequences": sum(len(r) for r in work), "tokens_naive": st.naive,
            "tokens_forwarded": st.forwarded, "tokens_unique": st.unique, "padded": st.padded, "calls": st.calls,
            "mean_len": mean_len, "ours_s": t_ours, "naive_s": t_naive if naive_items else None,
            "naive_items": naive_items, "s_per_item_ours": s_ours, "s_per_item_naive": s_naive,
            "speedup": s_naive / s_ours if naive_items else None, "max_delta": delta, "same_choices": same,
            "block_seconds": [t for _, t in per_block], "block_items": [n for n, _ in per_block],
            **_same_items(per_block, naive_items, t_naive),
            "tokens_ratio": st.forwarded / st.unique, "body_seconds": st.body_seconds,
            "body_tok_s": st.forwarded / st.body_seconds if st.body_seconds else None,
            **engine_references(lm, st, t_ours, mean_len, args.repeats, gemm, scorer.linear),
            "calls_per_item": st.calls / len(work), "items_per_call": scorer.items_per_call,
            "max_batch_tokens": scorer.max_batch_tokens, "max_batch_rows": scorer.max_batch_rows,
            "attention": scorer.attention, "linear": scorer.linear}


def _n(x: float | None, spec: str) -> str:
    """A figure as printed; n/a for one that compared nothing."""
    return "n/a" if x is None else format(x, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=8, shuffles=30)
    ap.add_argument("--naive-items", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3, help="timed calls of each body reference")
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args()
    lm, pool, evaluated = setup(args)
    gemm = gemm_rate(lm.device, lm.dtype)
    print(f"GEMM {gemm['side']}^3 {gemm['dtype']}: torch.mm {gemm['torch_mm_gflops']['best']:.0f} GFLOP/s" +
          (f", oneDNN {gemm['onednn_gflops']['best']:.0f}" if gemm["onednn_gflops"] else ""), flush=True)
    results = {}
    for scoring in scorings(args):
        r = bench(lm, pool, evaluated, args, SCORINGS[scoring], min(args.naive_items, len(evaluated)), gemm)
        results[scoring] = r
        naive = (f"naive {r['naive_s']:.1f}s on {r['naive_items']} items ({r['s_per_item_naive']:.1f} s/item) | "
                 f"speedup {r['speedup']:.1f}x max_delta {r['max_delta']:.2e} same_choices={r['same_choices']}"
                 if r["naive_items"] else "naive: not run")
        print(f"[{scoring}] sequences={r['sequences']} mean_len={r['mean_len']:.0f} tokens naive={r['tokens_naive']} "
              f"forwarded={r['tokens_forwarded']} unique={r['tokens_unique']} padded={r['padded']} "
              f"calls={r['calls']} calls_per_item={r['calls_per_item']:.2f} (items_per_call={r['items_per_call']} "
              f"max_batch_tokens={r['max_batch_tokens']} max_batch_rows={r['max_batch_rows']} attention="
              f"{r['attention']} linear={r['linear']}) | ours {r['ours_s']:.1f}s ({r['s_per_item_ours']:.2f} s/item) | "
              f"{naive} | tokens_ratio={r['tokens_ratio']:.3f}", flush=True)
        print(f"[{scoring}] " + references_line(r), flush=True)
    head = results.get("letters") or next(iter(results.values()))
    compared = [r for r in results.values() if r["naive_items"]]
    print("RESULT " + (f"speedup_vs_naive={head['speedup']:.1f} " if head["naive_items"] else "") +
          (f"max_delta={max(r['max_delta'] for r in compared):.2e} "
           f"same_choices={all(r['same_choices'] for r in compared)} " if compared else "") +
          f"tokens_ratio={head['tokens_ratio']:.3f} vs_body_short_rows={head['vs_body_short_rows']['vs_best']:.2f} "
          f"useful_vs_torch_mm={head['useful_vs_torch_mm']:.2f} calls_per_item={head['calls_per_item']:.2f}")
    if args.json:
        write_json(args.json, {"args": {k: ("JSON" if k == "json" and v else v) for k, v in vars(args).items()},
                               "device": device_facts(lm), "gemm": gemm, "results": results},
                   lm.device, lm.tokenizer)


if __name__ == "__main__":
    main()
