"""Where the engine's time goes: torch.profiler over `PrefixScorer.score` on the benchmark workload.

Scores `--warm-items` items first (so the run prefix is cached and allocations are warm, as in a long run),
then profiles the next item: forward calls, tokens, wall time, and the operators that take the time, grouped
as matmul (linear layers and LM head), attention, element-wise and copies. Run it with PYTHONPATH pointing at
another checkout to profile that checkout's engine on the same workload (before/after comparisons).

    python benchmarks/profile_scoring.py [--scorings letters] [--warm-items 1] [--rows 25]
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict

from torch.profiler import ProfilerActivity, profile

from mcqa_toolkit.backends.hf.engine import PrefixScorer

try:  # run as a script or as a module
    from _workload import SCORINGS, add_arguments, build, scorings, setup
except ModuleNotFoundError:
    from benchmarks._workload import SCORINGS, add_arguments, build, scorings, setup

GROUPS = {"matmul": ("aten::mm", "aten::bmm", "aten::addmm"), "attention": ("attention",),
          "copies": ("aten::cat", "aten::copy_", "aten::clone", "aten::index", "aten::repeat")}


def group_of(name: str) -> str:
    for group, keys in GROUPS.items():
        if any(k in name for k in keys):
            return group
    return "other ops"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=2, shuffles=30)
    ap.add_argument("--warm-items", type=int, default=1)
    ap.add_argument("--rows", type=int, default=25, help="operator rows to print")
    args = ap.parse_args()
    lm, pool, evaluated = setup(args)
    for scoring in scorings(args):
        work = build(lm, evaluated[: args.warm_items + 1], pool, args, SCORINGS[scoring])
        scorer = PrefixScorer(lm)
        for reqs, shared in work[:-1]:
            scorer.score(reqs, shared)
        before = dict(scorer.stats.__dict__)
        reqs, shared = work[-1]
        t0 = time.perf_counter()
        with profile(activities=[ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if lm.device.type == "cuda"
                                                        else [])], record_shapes=True) as prof:
            scorer.score(reqs, shared)
        wall = time.perf_counter() - t0
        delta = {k: v - before[k] for k, v in scorer.stats.__dict__.items()}
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        groups: dict[str, float] = defaultdict(float)
        for e in events:
            groups[group_of(e.key)] += e.self_cpu_time_total
        print(f"[{scoring}] one item, {len(reqs)} requests: wall {wall:.2f}s (profiled) forward calls="
              f"{delta.get('calls', 'n/a')} tokens forwarded={delta['forwarded']} unique={delta['unique']} "
              f"padded={delta['padded']} scored positions={delta['scored_positions']}")
        print(f"[{scoring}] self CPU by group: " + ", ".join(
            f"{g} {100 * t / total:.1f}%" for g, t in sorted(groups.items(), key=lambda kv: -kv[1])))
        print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=args.rows,
                                                                  max_name_column_width=48, max_shapes_column_width=70))


if __name__ == "__main__":
    main()
