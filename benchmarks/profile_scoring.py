"""Where the engine's time goes: a phase breakdown of one item's scoring on the benchmark workload.

Scores `--warm-items` items first (so the run prefix is cached and allocations are warm, as in a long run),
then scores the next item under torch.profiler. Phases: rendering and tokenisation (timed around the
workload's `build`, which uses the helpers HFBackend uses), then the engine's own `record_function` ranges
(engine.py): `mcqa::cache` (shared cache views), `mcqa::plan` (trie layout and rows), `mcqa::masks` (row
inputs and 4D masks), `mcqa::body` (forward calls of the model body: item prefix and packed rows), `mcqa::head`
(LM head + log-softmax at scored positions), and the rest of `score` (Python glue). The body is split further
by operator: matmul (linear layers), attention (sdpa/eager kernels), cat/copy (the cache rows are concatenated
with each call's new keys/values inside the cache update) and other element-wise ops. Profiling adds some
overhead; the percentages, not the absolute seconds, are the result. Keep it short on a shared machine: it
profiles one item.

    python benchmarks/profile_scoring.py [--scorings letters] [--warm-items 1] [--row-tokens 256] [--rows 0]
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict

from torch.profiler import ProfilerActivity, profile

from mcqa_toolkit.backends.hf.engine import PrefixScorer

try:  # run as a script or as a module
    from _workload import SCORINGS, add_arguments, build, render_item, scorings, setup
except ModuleNotFoundError:
    from benchmarks._workload import SCORINGS, add_arguments, build, render_item, scorings, setup

PHASES = ("mcqa::cache", "mcqa::plan", "mcqa::masks", "mcqa::body", "mcqa::head")
OPS = {"matmul": ("aten::mm", "aten::bmm", "aten::addmm", "aten::matmul", "aten::linear"),
       "attention": ("attention", "aten::_scaled_dot_product", "aten::softmax", "aten::_softmax"),
       "cat/copy": ("aten::cat", "aten::copy_", "aten::clone", "aten::contiguous", "aten::index", "aten::repeat")}


def op_group(name: str) -> str:
    for group, keys in OPS.items():
        if any(k in name for k in keys):
            return group
    return "other ops"


def body_breakdown(events) -> dict[str, float]:
    """Self CPU microseconds of the operators inside `mcqa::body` ranges, by operator group."""
    spans = [(e.time_range.start, e.time_range.end, e.thread) for e in events if e.name == "mcqa::body"]
    out: dict[str, float] = defaultdict(float)
    for e in events:
        if e.name.startswith("mcqa::"):
            continue
        if any(s <= e.time_range.start and e.time_range.end <= t and e.thread == th for s, t, th in spans):
            out[op_group(e.name)] += e.self_cpu_time_total
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=2, shuffles=30)
    ap.add_argument("--warm-items", type=int, default=1)
    ap.add_argument("--row-tokens", type=int, default=None, help="engine row width (default: the engine's)")
    ap.add_argument("--rows", type=int, default=0, help="also print the top operators table (rows)")
    args = ap.parse_args()
    lm, pool, evaluated = setup(args)
    options = {} if args.row_tokens is None else {"row_tokens": args.row_tokens}
    for scoring in scorings(args):
        scorer = PrefixScorer(lm, **options)
        for reqs, shared in build(lm, evaluated[: args.warm_items], pool, args, SCORINGS[scoring]):
            scorer.score(reqs, shared)
        item = evaluated[args.warm_items: args.warm_items + 1]
        t0 = time.perf_counter()
        render_item(item[0], pool, args)
        t_render = time.perf_counter() - t0
        t0 = time.perf_counter()
        (reqs, shared), = build(lm, item, pool, args, SCORINGS[scoring])
        t_tok = time.perf_counter() - t0 - t_render
        before = dict(scorer.stats.__dict__)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if lm.device.type == "cuda" else [])
        t0 = time.perf_counter()
        with profile(activities=activities) as prof:
            scorer.score(reqs, shared)
        t_score = time.perf_counter() - t0
        d = {k: v - before[k] for k, v in scorer.stats.__dict__.items()}
        events = prof.events()
        phase = defaultdict(float)
        for e in events:
            if e.name in PHASES:
                phase[e.name] += e.cpu_time_total / 1e6
        total = t_render + t_tok + t_score
        rows = [("rendering", t_render), ("tokenisation", t_tok)] + [(p, phase[p]) for p in PHASES]
        rows.append(("other (Python glue in score)", t_score - sum(phase.values())))
        print(f"[{scoring}] item {item[0].item_id}: {len(reqs)} requests, forward calls={d['calls']} tokens "
              f"forwarded={d['forwarded']} unique={d['unique']} padded={d['padded']} scored positions="
              f"{d['scored_positions']} | wall {total:.2f}s (score {t_score:.2f}s profiled)")
        for name, sec in rows:
            print(f"[{scoring}]   {name:<30s} {sec:7.3f} s  {100 * sec / total:5.1f}%")
        body = body_breakdown(events)
        body_total = sum(body.values()) or 1.0
        print(f"[{scoring}]   inside mcqa::body (self CPU): " + ", ".join(
            f"{g} {100 * t / body_total:.1f}%" for g, t in sorted(body.items(), key=lambda kv: -kv[1])))
        if args.rows:
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows,
                                            max_name_column_width=48))


if __name__ == "__main__":
    main()
