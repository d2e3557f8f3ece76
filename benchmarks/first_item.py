"""What a run's first item costs beyond its later ones, on the same item (so that item lengths cannot differ):

  A  the item scored first in this process, by a new run (a new PrefixScorer and TokenCache, as HFBackend makes);
  B  the same item again in that run (its run prefix now cached);
  C  the same item by another new run in the same, now warm, process (its run prefix encoded again).

A - C is the process's own warm-up (first kernel calls, primitive set-up, lazy imports), C - B what the run prefix
costs inside the engine, and `prefix_at_body_s` what the run prefix costs at the model body's plain forward on one
row of its length (_reference.body_rate, with the engine's linear kernel; best of `--repeats`). Goal (issue 49):
A <= B + prefix_at_body_s. Letters then options by default, in one process: only the first scoring's A holds the
process warm-up (`first_in_process`). Workload: the other benchmarks' (_workload.py; enem-long by default).

    python benchmarks/first_item.py [--scorings both] [--repeats 3] [--json results/benchmarks/.../first_item.json]
"""
from __future__ import annotations

import argparse
import time

from mcqa_toolkit.backends.hf.engine import PrefixScorer
from mcqa_toolkit.backends.hf.segments import TokenCache

try:  # run as a script (python benchmarks/first_item.py) or as a module (python -m benchmarks.first_item)
    from _reference import body_rate, device_facts, sync
    from _results import write_json
    from _workload import SCORINGS, add_arguments, build, engine_options, scorings, setup
except ModuleNotFoundError:
    from benchmarks._reference import body_rate, device_facts, sync
    from benchmarks._results import write_json
    from benchmarks._workload import SCORINGS, add_arguments, build, engine_options, scorings, setup


def scored_once(lm, scorer: PrefixScorer, cache: TokenCache, item, pool, args, method: str) -> dict[str, float]:
    """One item through a run's scorer: wall seconds (rendering and tokenising included), tokens forwarded and
    seconds inside the body's calls."""
    forwarded, body = scorer.stats.forwarded, scorer.stats.body_seconds
    t0 = time.perf_counter()
    scorer.score_block(build(lm, [item], pool, args, method, cache))
    sync(lm.device)
    return {"seconds": time.perf_counter() - t0, "forwarded": scorer.stats.forwarded - forwarded,
            "body_seconds": scorer.stats.body_seconds - body}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=1, shuffles=30)
    ap.add_argument("--repeats", type=int, default=3, help="timed calls of the body reference")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    lm, pool, evaluated = setup(args)
    item = list(evaluated)[0]
    results = {}
    for n, scoring in enumerate(scorings(args)):
        method, options = SCORINGS[scoring], engine_options(args)
        run_a = PrefixScorer(lm, **options), TokenCache(lm.tokenizer)
        a = scored_once(lm, *run_a, item, pool, args, method)
        b = scored_once(lm, *run_a, item, pool, args, method)
        c = scored_once(lm, PrefixScorer(lm, **options), TokenCache(lm.tokenizer), item, pool, args, method)
        prefix = a["forwarded"] - b["forwarded"]
        ref = body_rate(lm, prefix, prefix, args.repeats, run_a[0].linear) if prefix else None
        at_body = prefix / ref["tok_s"]["best"] if ref else 0.0
        results[scoring] = {"item_id": item.item_id, "first_in_process": n == 0, "A_first": a, "B_again_same_run": b,
                            "C_again_new_run": c, "run_prefix_tokens": prefix, "body_prefix_row": ref,
                            "prefix_at_body_s": at_body, "warm_up_s": a["seconds"] - c["seconds"],
                            "prefix_in_engine_s": c["seconds"] - b["seconds"],
                            "goal_met": a["seconds"] <= b["seconds"] + at_body}
        r = results[scoring]
        print(f"[{scoring}] item {item.item_id}: first {a['seconds']:.2f} s, again {b['seconds']:.2f} s, new run "
              f"{c['seconds']:.2f} s | process warm-up {r['warm_up_s']:.2f} s | run prefix {prefix} tokens: "
              f"{r['prefix_in_engine_s']:.2f} s in the engine, {at_body:.2f} s at the body's plain rate"
              + (f" ({ref['tok_s']['best']:.0f} tok/s on 1x{ref['length']})" if ref else "")
              + f" | first <= again + prefix at the body's rate: {'yes' if r['goal_met'] else 'no'}", flush=True)
    write_json(args.json, {"args": {**vars(args), "json": "JSON" if args.json else None},
                           "device": device_facts(lm), "results": results}, lm.device, lm.tokenizer)


if __name__ == "__main__":
    main()
