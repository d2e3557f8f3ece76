"""Throughput of the openai backend against real local servers, vLLM and llama-cpp-python side by side.

The same requests go to each server in turn (never both at once: they share the cores), with 1, 4 and 16
requests in flight, the request cache off:
  letters  first-token letter requests (demo exam, ENEM-paper prompt, N shuffles per item: max_tokens 1, top-20);
  echo     echo requests of short texts (prompt log-probs, what option log-likelihoods, cloze and Min-K% send;
           llama-cpp-python sorts its 262k vocabulary at every echoed position, so the texts are short).
Printed per server, kind and concurrency: requests/s and tokens/s (prompt + completion tokens the server reports),
then vLLM / llama-cpp-python ratios at each concurrency, all measured in one run. Both serve the embedded
Gemma-3-270M: vLLM its dequantised fp32 weights (backends/vllm_server.py, from .venv-vllm), llama.cpp the Q4_K_M
GGUF (backends/llama_server.py). On 2 CPU cores neither batches usefully (one compute thread each); on a GPU vLLM
batches the requests in flight, which is where concurrency pays (docs/backends.md, "Scale-out").

    python benchmarks/server_throughput.py [--servers vllm llama] [--items 4] [--shuffles 3] [--concurrency 1 4 16]
    python benchmarks/server_throughput.py --base-url http://gpu1:8000/v1 --model google/gemma-3-27b-pt
"""
from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.base import Continuation
from mcqa_toolkit.backends.llama_server import llama_server
from mcqa_toolkit.backends.vllm_server import vllm_server
from mcqa_toolkit.datasets import load
from mcqa_toolkit.prompts import load_template, render
from mcqa_toolkit.prompts.permutations import permutations

SERVERS = {"vllm": vllm_server, "llama": llama_server}
ECHO_TEXTS = ["A canção é bonita e o coração também.", "¿Dónde está la estación? Él no sabe.",
              "Perché la città è così bella? È già tardi.", "The sky on a clear day is blue."]


def letter_prompts(n_items: int, shuffles: int) -> list:
    items = load("demo", language="pt")[:n_items]
    t = load_template("pt", "enem")
    return [render(it, t, permutation=p, shuffle=k)
            for it in items for k, p in enumerate(permutations(it.n_options, shuffles, seed=0, key=it.parallel_id))]


def echo_requests(n: int) -> list[Continuation]:
    return [Continuation("", ECHO_TEXTS[i % len(ECHO_TEXTS)] + f" {i}") for i in range(n)]


def measure(url: str, model: str, kind: str, work: list, concurrency: int) -> dict[str, float]:
    backend = load_backend({"backend": "openai", "model": model, "base_url": url, "cache": False, "probe": False,
                            "concurrency": concurrency})
    t0 = time.perf_counter()
    backend.letter_logprobs(work) if kind == "letters" else backend.loglikelihoods(work)
    seconds = time.perf_counter() - t0
    return {"kind": kind, "concurrency": concurrency, "seconds": seconds, "requests_per_s": len(work) / seconds,
            "tokens_per_s": backend.usage()["forwarded_tokens"] / seconds}


def bench(url: str, model: str, args: argparse.Namespace) -> list[dict[str, float]]:
    work = {"letters": letter_prompts(args.items, args.shuffles), "echo": echo_requests(args.echo)}
    measure(url, model, "letters", work["letters"][:2], 1)  # warm-up: model pages, HTTP connection
    return [measure(url, model, kind, work[kind], c) for kind in ("letters", "echo") for c in args.concurrency]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", nargs="+", choices=sorted(SERVERS), default=["vllm", "llama"])
    ap.add_argument("--items", type=int, default=4)
    ap.add_argument("--shuffles", type=int, default=3)
    ap.add_argument("--echo", type=int, default=8, help="echo requests per concurrency level")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--base-url", default=None, help="an existing server instead (then --servers is ignored)")
    ap.add_argument("--model", default="gemma-3-270m")
    args = ap.parse_args()
    results: dict[str, list] = {}
    for name in ([args.base_url] if args.base_url else args.servers):
        with contextlib.ExitStack() as stack:
            url = name if args.base_url else stack.enter_context(
                SERVERS[name](Path(stack.enter_context(tempfile.TemporaryDirectory()))))
            results[name] = bench(url, args.model, args)
        for r in results[name]:
            print(f"{name:>6} {r['kind']:<7} concurrency {r['concurrency']:>3}: {r['seconds']:6.1f} s "
                  f"{r['requests_per_s']:6.2f} req/s {r['tokens_per_s']:8.0f} tok/s", flush=True)
    if set(results) == {"vllm", "llama"}:
        out = []
        for v, ll in zip(results["vllm"], results["llama"], strict=True):
            key = f"{v['kind']}_c{v['concurrency']}"
            out.append(f"{key}_req={v['requests_per_s'] / ll['requests_per_s']:.2f} "
                       f"{key}_tok={v['tokens_per_s'] / ll['tokens_per_s']:.2f}")
        print("RESULT vllm/llama " + " ".join(out))


if __name__ == "__main__":
    main()
