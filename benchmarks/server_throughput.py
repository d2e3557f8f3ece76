"""Throughput of the openai backend against a local llama-cpp-python server, by requests in flight.

The same first-token letter requests (demo exam, ENEM-paper prompt, N shuffles per item; the request cache is
off) are sent with concurrency 1, 4 and 16; printed: requests/s and tokens/s (prompt + completion tokens the
server reports) and both as ratios to concurrency 1, measured in one run. llama-cpp-python's server computes
one request at a time, so on it concurrency mostly hides HTTP and client latency; vLLM batches requests in
flight on the GPU, which is where concurrency pays (see README, "Scale-out").

    python benchmarks/server_throughput.py [--items 8] [--shuffles 4] [--concurrency 1 4 16]
    python benchmarks/server_throughput.py --base-url http://gpu1:8000/v1 --model google/gemma-3-27b-pt
"""
from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.llama_server import llama_server
from mcqa_toolkit.datasets import load
from mcqa_toolkit.prompts import load_template, render
from mcqa_toolkit.prompts.permutations import permutations


def prompts(n_items: int, shuffles: int) -> list:
    items = load("demo", language="pt")[:n_items]
    t = load_template("pt", "enem")
    return [render(it, t, permutation=p, shuffle=k)
            for it in items for k, p in enumerate(permutations(it.n_options, shuffles, seed=0, key=it.parallel_id))]


def measure(url: str, model: str, work: list, concurrency: int) -> dict[str, float]:
    backend = load_backend({"backend": "openai", "model": model, "base_url": url, "cache": False, "probe": False,
                            "concurrency": concurrency})
    t0 = time.perf_counter()
    backend.letter_logprobs(work)
    seconds = time.perf_counter() - t0
    usage = backend.usage()
    return {"concurrency": concurrency, "seconds": seconds, "requests_per_s": len(work) / seconds,
            "tokens_per_s": usage["forwarded_tokens"] / seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=8)
    ap.add_argument("--shuffles", type=int, default=4)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--base-url", default=None, help="an existing server (default: start llama-cpp-python)")
    ap.add_argument("--model", default="gemma-3-270m")
    args = ap.parse_args()
    work = prompts(args.items, args.shuffles)
    with contextlib.ExitStack() as stack:
        url = args.base_url or stack.enter_context(llama_server(Path(stack.enter_context(tempfile.TemporaryDirectory()))))
        measure(url, args.model, work[:2], 1)  # warm-up: model pages, HTTP connection
        rows = [measure(url, args.model, work, c) for c in args.concurrency]
    base = rows[0]
    print(f"{len(work)} letter requests ({args.items} items x {args.shuffles} shuffles), server {url}")
    for r in rows:
        print(f"concurrency {r['concurrency']:>3}: {r['seconds']:6.1f} s  {r['requests_per_s']:6.2f} req/s "
              f"({r['requests_per_s'] / base['requests_per_s']:.2f}x)  {r['tokens_per_s']:8.0f} tok/s "
              f"({r['tokens_per_s'] / base['tokens_per_s']:.2f}x)")
    ratios = " ".join(f"req_ratio_c{r['concurrency']}={r['requests_per_s'] / base['requests_per_s']:.2f}"
                      for r in rows[1:])
    print(f"RESULT requests={len(work)} {ratios}")


if __name__ == "__main__":
    main()
