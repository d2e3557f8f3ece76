"""vLLM's CPU model body against ours on the same rows: where each spends its time per computed token.

Run by vLLM's own Python (the project's `.venv-vllm`, `make vllm`) from the repository root; the engine core runs
in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0, set here) so torch.profiler sees its operators. Workload: the
other benchmarks' (_workload.py; enem-long by default), letters (one generated token per prompt, the shown letters'
log-probs, as backends/vllm.py asks them), the embedded Gemma-3-270M in fp32, vLLM compiled unless `--eager`,
prefix caching on. The first `--warm-items` items are scored untimed (compilation, the few-shot block's cache),
then the next `--items` under the profiler. Printed and written (`--json`): the tokens vLLM computed (prompt tokens
minus those read from its prefix cache), wall seconds, and the profiler's self CPU time by operator group (the
groups of profile_scoring.py, plus `compiled` for inductor's fused kernels), in microseconds per computed token,
with the top operators. profile_scoring.py prints the same groups for our body (`per unique token inside the
body`), on the same items with the engine's CPU defaults, for the comparison (docs/performance.md).

    .venv-vllm/bin/python benchmarks/vllm_body.py --vllm-model DIR [--warm-items 1] [--items 1] [--threads 2]
        [--json out.json]

`--vllm-model`: what vLLM loads, for the embedded model its dequantised folder (vLLM's environment lacks the GGUF
package; vs_vllm.vllm_model names it); the engine arguments are vs_vllm.py's on a CPU (fp32, 4,096 positions, a
1 GiB KV cache, seed 0, prefix caching on); set OMP_NUM_THREADS to `--threads` (vLLM's CPU threads).
"""
from __future__ import annotations

import argparse
import os
import time
from collections import defaultdict

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine core in this process: profiled

try:  # run as a script (python benchmarks/vllm_body.py) or as a module
    from _results import write_json
    from _workload import add_arguments, render_item, workload_items
except ModuleNotFoundError:
    from benchmarks._results import write_json
    from benchmarks._workload import add_arguments, render_item, workload_items

GROUPS = {"matmul": ("mm", "linear", "gemm", "onednn", "mkldnn", "matmul", "baddbmm"),
          "attention": ("attention", "attn", "sdpa", "paged", "flash", "softmax"),
          "compiled": ("cpp_fused", "compiled", "inductor", "graph"),
          "cat/copy": ("cat", "copy", "clone", "contiguous", "index", "gather", "scatter", "repeat")}


def group(name: str) -> str:
    low = name.lower()
    for g, keys in GROUPS.items():
        if any(k in low for k in keys):
            return g
    return "other ops"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=1, shuffles=30)
    ap.add_argument("--warm-items", type=int, default=1)
    ap.add_argument("--eager", action="store_true", help="vLLM's enforce_eager (torch.compile off)")
    ap.add_argument("--vllm-model", required=True, help="the folder vLLM loads (see above)")
    ap.add_argument("--rows", type=int, default=25, help="top operators printed")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    from mcqa_toolkit.backends.vllm import load

    if args.threads:
        torch.set_num_threads(args.threads)
    pool, evaluated, source = workload_items(args)
    warm = evaluated[: args.warm_items]
    timed = evaluated[args.warm_items: args.warm_items + args.items]
    t0 = time.perf_counter()
    engine = {"dtype": args.dtype, "max_model_len": 4096, "seed": 0, "kv_cache_memory_bytes": 2 ** 30}
    backend = load(args.vllm_model, name=args.model, **engine, **({"enforce_eager": True} if args.eager else {}))
    start = time.perf_counter() - t0
    prompts = lambda items: [p for it in items for p in render_item(it, pool, args)]  # noqa: E731
    backend.letter_logprobs(prompts(warm))
    before = backend.usage()
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        backend.letter_logprobs(prompts(timed))
    seconds = time.perf_counter() - t0
    used = {k: v - before.get(k, 0) for k, v in backend.usage().items()}
    computed = used["prompt_tokens"] - used["cached_tokens"]
    by_group: dict[str, float] = defaultdict(float)
    rows = []
    for e in prof.key_averages():
        if e.self_cpu_time_total > 0:
            by_group[group(e.key)] += e.self_cpu_time_total
            rows.append((e.key, e.self_cpu_time_total, e.count))
    rows.sort(key=lambda r: -r[1])
    per_token = {g: us / computed for g, us in sorted(by_group.items(), key=lambda kv: -kv[1])}
    print(f"vLLM {'eager' if args.eager else 'compiled'} (start {start:.0f} s), {source}, {len(timed)} item(s) x "
          f"{args.shuffles} shuffles: {computed} tokens computed ({used['prompt_tokens']} prompt - "
          f"{used['cached_tokens']} cached) in {seconds:.2f} s = {computed / seconds:.0f} tok/s")
    print("self CPU per computed token: " + ", ".join(f"{g} {us:.0f} us" for g, us in per_token.items()) +
          f"; in all {sum(per_token.values()):.0f} us")
    for name, us, count in rows[: args.rows]:
        print(f"  {name[:70]:<70s} {us / 1000:9.1f} ms  {count:6d} calls  [{group(name)}]")
    write_json(args.json, {"args": {**vars(args), "json": "JSON" if args.json else None,
                                    "vllm_model": "the embedded model's dequantised folder"}, "source": source,
                           "vllm": {"compile": not args.eager, "start_s": start,
                                    "torch_threads": torch.get_num_threads(),
                                    "provenance": {k: v for k, v in backend.provenance().items() if k != "source"}},
                           "usage": used, "computed_tokens": computed, "seconds": seconds,
                           "self_cpu_us_per_token": per_token,
                           "top_ops": [{"name": n, "self_cpu_us": us, "calls": c, "group": group(n)}
                                       for n, us, c in rows[: args.rows]]}, "cpu", backend.tok.tokenizer)


if __name__ == "__main__":
    main()
