"""Where the engine's time goes: a phase breakdown of one block's scoring on the benchmark workload.

Scores `--warm-items` items first (so the run prefix is cached and allocations are warm, as in a long run),
then scores the next block (the engine's `items_per_call` items, `--budget` / `--items-per-call` as in
_workload.py) under torch.profiler. Phases, per item: rendering and tokenisation (timed around the workload's
`build`, which uses the helpers HFBackend uses), then the engine's own `record_function` ranges (engine.py,
block.py): `mcqa::cache` (cache views), `mcqa::plan` (trie layout, rows and calls), `mcqa::masks` (row inputs and
4D masks), `mcqa::body` (forward calls of the model body: item prefixes and packed rows), `mcqa::head` (LM head +
log-softmax at scored positions), and the rest of `score_block` (Python glue). The body is split further by
operator: matmul (linear layers), attention (sdpa/eager kernels), cat/copy (each row's copy of its item's cached
keys/values, concatenated with the call's new ones) and other element-wise ops.

Host work on a GPU: every operator the body runs is at least one kernel launch, which costs the host about the same
whatever the tensor sizes (`--launch-us`: an estimate of ~36 us from an H100 run, 0.16 s for ~4,400 launches per
item, that left no raw file; pass the cost measured on the GPU at hand); the operators per forward call depend on
the model, not on the tokens. So the operator count per item (printed per
forward call and per item) times `--launch-us`, plus the host phases (rendering, tokenisation, plan, masks,
cache, glue), predicts the host time per item on a GPU at this budget (`predicted GPU host ms/item`). Profiling
adds some overhead; the percentages, not the absolute seconds, are the result. Keep it short on a shared machine.

The machine's reference, so that host times of different days and machines can be compared: the same items
tokenised again without the run's TokenCache (every prompt encoded whole, as `--no-token-cache` does), measured in
the same run and printed with the host phases' ratio to it, and benchmarks/_machine.py's reference line (commit,
GEMM rate, a fixed tokenisation).

    python benchmarks/profile_scoring.py [--scorings letters] [--warm-items 1] [--budget cuda] [--rows 0]
"""
from __future__ import annotations

import argparse
import time
from collections import defaultdict

from torch.profiler import ProfilerActivity, profile

from mcqa_toolkit.backends.hf.engine import PrefixScorer
from mcqa_toolkit.backends.hf.segments import TokenCache

try:  # run as a script or as a module
    import _machine
    from _workload import SCORINGS, add_arguments, blocks, build, engine_options, render_item, scorings, setup
except ModuleNotFoundError:
    from benchmarks import _machine
    from benchmarks._workload import (
        SCORINGS,
        add_arguments,
        blocks,
        build,
        engine_options,
        render_item,
        scorings,
        setup,
    )

PHASES = ("mcqa::cache", "mcqa::plan", "mcqa::masks", "mcqa::body", "mcqa::head")
OPS = {"matmul": ("aten::mm", "aten::bmm", "aten::addmm", "aten::matmul", "aten::linear", "mkldnn::_linear_pointwise"),
       "attention": ("attention", "aten::_scaled_dot_product", "aten::softmax", "aten::_softmax"),
       "cat/copy": ("aten::cat", "aten::copy_", "aten::clone", "aten::contiguous", "aten::index", "aten::repeat",
                    "aten::gather")}
# operators that only make a view (no kernel on a GPU)
VIEWS = ("aten::view", "aten::_unsafe_view", "aten::reshape", "aten::t", "aten::transpose", "aten::expand",
         "aten::slice", "aten::select", "aten::unsqueeze", "aten::squeeze", "aten::as_strided", "aten::permute",
         "aten::alias", "aten::detach", "aten::lift_fresh", "aten::empty", "aten::resolve_conj", "aten::resolve_neg",
         "aten::split", "aten::chunk", "aten::unbind", "aten::narrow", "aten::_reshape_alias", "aten::result_type",
         "aten::is_nonzero", "aten::empty_like", "aten::empty_strided")


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


def launches(events) -> tuple[list[int], int]:
    """(inside each `mcqa::body` call, in all) operators that would each launch at least one kernel on a GPU: aten
    and oneDNN operators without operator children, views left out, and the kernels inductor generated (the fused
    body: recorded by name with `cpp.enable_kernel_profile`)."""
    spans = [(e.time_range.start, e.time_range.end, e.thread) for e in events if e.name == "mcqa::body"]
    body, every = [0] * len(spans), 0
    for e in events:
        if not is_launch(e):
            continue
        every += 1
        for k, (s, t, th) in enumerate(spans):
            body[k] += s <= e.time_range.start and e.time_range.end <= t and e.thread == th
    return body, every


def is_launch(e) -> bool:
    """Whether profiler event `e` is one kernel launch (see `launches`)."""
    if "cpp_fused" in e.name or e.name.startswith("triton_"):
        return True
    return _operator(e) and not any(_operator(c) for c in e.cpu_children)


def _operator(e) -> bool:
    return e.name.startswith(("aten::", "mkldnn::")) and e.name not in VIEWS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=17, shuffles=30)  # a warm item, then a block of up to 16
    ap.add_argument("--warm-items", type=int, default=1)
    ap.add_argument("--row-tokens", type=int, default=None, help="engine row width (default: the engine's)")
    ap.add_argument("--launch-us", type=float, default=36.0, help="host cost of one kernel launch on the GPU to "
                    "predict (default: an estimate from an H100 run, 0.16 s / ~4,400 launches, that left no raw file)")
    ap.add_argument("--rows", type=int, default=0, help="also print the top operators table (rows)")
    ap.add_argument("--no-token-cache", action="store_true", help="tokenise every prompt whole (as before the "
                    "run's TokenCache): the host time it saves")
    args = ap.parse_args()
    if args.fused:  # name the generated kernels in the profile (counted as launches)
        import torch._inductor.config

        torch._inductor.config.cpp.enable_kernel_profile = True
    lm, pool, evaluated = setup(args)
    print(_machine.line(_machine.reference(lm.device, lm.tokenizer)), flush=True)
    options = {**engine_options(args), **({} if args.row_tokens is None else {"row_tokens": args.row_tokens})}
    for scoring in scorings(args):
        scorer = PrefixScorer(lm, **options)
        cache = None if args.no_token_cache else TokenCache(lm.tokenizer)  # a run's, as HFBackend keeps one
        for block in blocks(list(evaluated[: args.warm_items]), scorer.items_per_call):
            scorer.score_block(build(lm, block, pool, args, SCORINGS[scoring], cache))
        items = evaluated[args.warm_items: args.warm_items + scorer.items_per_call]
        t0 = time.perf_counter()
        for it in items:
            render_item(it, pool, args)
        t_render = time.perf_counter() - t0
        t0 = time.perf_counter()
        work = build(lm, items, pool, args, SCORINGS[scoring], cache)
        t_tok = time.perf_counter() - t0 - t_render
        t0 = time.perf_counter()
        build(lm, items, pool, args, SCORINGS[scoring], None)  # the machine's reference: no TokenCache
        t_reference = time.perf_counter() - t0 - t_render
        before = dict(scorer.stats.__dict__)
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if lm.device.type == "cuda" else [])
        with profile(activities=activities) as prof:  # timed inside: the profiler's start and stop are not glue
            t0 = time.perf_counter()
            scorer.score_block(work)
            t_score = time.perf_counter() - t0
        d = {k: v - before[k] for k, v in scorer.stats.__dict__.items()}
        events = prof.events()
        phase = defaultdict(float)
        for e in events:
            if e.name in PHASES:
                phase[e.name] += e.cpu_time_total / 1e6
        n = len(items)
        total = t_render + t_tok + t_score
        rows = [("rendering", t_render), ("tokenisation", t_tok)] + [(p, phase[p]) for p in PHASES]
        rows.append(("other (Python glue in score)", t_score - sum(phase.values())))
        per_call, ops = launches(events)
        in_body = sum(per_call)
        host = total - phase["mcqa::body"] - phase["mcqa::head"]
        print(f"[{scoring}] {n} item(s) ({', '.join(it.item_id for it in items)}), items_per_call="
              f"{scorer.items_per_call} max_batch_tokens={scorer.max_batch_tokens} "
              f"max_batch_rows={scorer.max_batch_rows}: "
              f"{sum(len(r) for r, _ in work)} requests, forward calls={d['calls']} ({d['calls'] / n:.2f}/item, "
              f"fused {d['fused_calls']}) tokens "
              f"forwarded={d['forwarded']} unique={d['unique']} padded={d['padded']} scored positions="
              f"{d['scored_positions']} | wall {total:.2f}s ({total / n:.2f} s/item; score {t_score:.2f}s profiled)")
        for name, sec in rows:
            print(f"[{scoring}]   {name:<30s} {sec / n:7.3f} s/item  {100 * sec / total:5.1f}%")
        body = body_breakdown(events)
        body_total = sum(body.values()) or 1.0
        print(f"[{scoring}]   inside mcqa::body (self CPU): " + ", ".join(
            f"{g} {100 * t / body_total:.1f}%" for g, t in sorted(body.items(), key=lambda kv: -kv[1])))
        print(f"[{scoring}]   per unique token inside mcqa::body (self CPU): " + ", ".join(
            f"{g} {t / max(d['unique'], 1):.0f} us" for g, t in sorted(body.items(), key=lambda kv: -kv[1])) +
            f"; in all {body_total / max(d['unique'], 1):.0f} us (vllm_body.py prints vLLM's)")
        predicted = 1000 * host / n + ops / n * args.launch_us / 1000
        print(f"[{scoring}]   kernel-launching ops: {in_body / max(d['calls'], 1):.0f} per forward call "
              f"({', '.join(map(str, per_call))} in the calls in turn), {ops / n:.0f} "
              f"per item ({in_body / n:.0f} in the body); host phases {1000 * host / n:.0f} ms/item; predicted GPU "
              f"host ms/item at {args.launch_us:.0f} us/launch: {predicted:.0f}")
        print(f"[{scoring}]   tokenisation without the run's TokenCache (the machine's reference): "
              f"{1000 * t_reference / n:.0f} ms/item; host phases / reference = {host / t_reference:.3f}")
        if args.rows:
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows,
                                            max_name_column_width=48))


if __name__ == "__main__":
    main()
