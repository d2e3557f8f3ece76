"""Does a llama.cpp server's history move a record's scores? The server-history rows of docs/invariance.md.

A llama-cpp-python server (backends/llama_server.py: the embedded Gemma-3-270M GGUF, Q4_K_M) answers the letter
requests of a run (the completions prompts `run()` sends through the openai backend, captured as they are sent)
in several histories, and the letters' log-probs are compared with those of a fresh server per request (a server
restarted before each request, so nothing was evaluated before it):
- `run order`: one server, the requests in the order the run sends them (each shares its prompt's beginning with
  the previous one: llama-cpp-python keeps the previous prompt's evaluated tokens and evaluates only what differs);
- `reversed`: one server, the same requests in reverse order;
- every request sent twice in a row on a fresh server (the second finds its whole prompt evaluated).
Then `conditions`: the short questions through llama_cpp.Llama in this process (what the server runs), cold against
the run order, with llama.cpp's context settings changed one at a time (sliding-window cache size, context size,
batch size, flash attention), to see which of them the effect depends on.
Two workloads: the fault suite's two short questions (tests/faults/test_server_killed.py) and enem-long's
real-length 4-shot prompts. Per history: requests, max |delta| of a letter's log-prob (letters in both answers' top
k), the share with the same best letter, whether every letter equals within 1e-6 (the equality rule's tolerance),
and the shared beginning with the previous prompt (characters) where the largest delta was seen.

    python benchmarks/server_history.py [--items 2 --shuffles 4] [--json results/benchmarks/server_history_DATE.json]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import mcqa_toolkit.backends.openai as openai_backend
from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.llama_server import LlamaServer
from mcqa_toolkit.backends.openai_wire import letter_body
from mcqa_toolkit.run import Strategy, run

try:
    from _results import write_json
    from _workload import add_arguments, workload_items
except ModuleNotFoundError:
    from benchmarks._results import write_json
    from benchmarks._workload import add_arguments, workload_items

REPO = Path(__file__).resolve().parents[1]
TOP_K = 20
LETTERS = (" A", " B", " C", " D", " E")
ATOL = 1e-6


def captured_prompts(server: LlamaServer, items, pool, st: Strategy, out: Path) -> list[str]:
    """The completions prompts of a run's letter requests, in the order the run sends them (the run itself goes
    to the server once: a throwaway warm-up of the same history)."""
    texts: list[str] = []
    real = openai_backend.letter_body

    def spy(model: str, text: str, k: int) -> dict[str, Any]:
        texts.append(text)
        return real(model, text, k)

    openai_backend.letter_body = spy
    try:
        backend = load_backend({"backend": "openai", "model": "gemma-3-270m", "base_url": server.url,
                                "probe": False, "cache_dir": str(out / "cache"), "concurrency": 1,
                                "top_logprobs": TOP_K})
        run(items, backend, st, out / "run", shot_pool=pool, dataset="server_history", progress=False)
    finally:
        openai_backend.letter_body = real
    return list(dict.fromkeys(texts))


def ask(server: LlamaServer, prompt: str) -> dict[str, float]:
    body = json.dumps(letter_body("gemma-3-270m", prompt, TOP_K)).encode()
    req = urllib.request.Request(f"{server.url}/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        top = json.load(r)["choices"][0]["logprobs"]["top_logprobs"][0]
    return {t: float(v) for t, v in top.items()}


def fresh(server: LlamaServer) -> None:
    server.stop()
    server.start()


def _shared(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=True):
        if x != y:
            break
        n += 1
    return n


def compare(base: list[dict[str, float]], other: list[dict[str, float]], prompts: list[str],
            previous: list[str | None]) -> dict[str, Any]:
    worst, at, same, exact = 0.0, None, 0, 0
    for k, (a, b) in enumerate(zip(base, other, strict=True)):
        letters = [t for t in LETTERS if t in a and t in b]
        d = max((abs(a[t] - b[t]) for t in letters), default=0.0)
        if d >= worst:
            worst, at = d, k
        best_a = max((t for t in LETTERS if t in a), key=a.get, default=None)
        best_b = max((t for t in LETTERS if t in b), key=b.get, default=None)
        same += best_a == best_b
        exact += d <= ATOL and {t for t in LETTERS if t in a} == {t for t in LETTERS if t in b}
    prev = previous[at] if at is not None else None
    return {"records": len(base), "max_abs_delta": worst, "same_choice": same / len(base),
            "equal_by_rule": exact == len(base), "ignored": [],
            "detail": {"exact_requests": exact, "worst_request_chars": len(prompts[at]) if at is not None else None,
                       "worst_request_shared_chars_with_previous": None if prev is None else _shared(prev,
                                                                                                  prompts[at])}}


def histories(server: LlamaServer, prompts: list[str]) -> dict[str, tuple[list[dict[str, float]], list]]:
    cold = []
    for p in prompts:
        fresh(server)
        cold.append(ask(server, p))
    out = {"fresh": (cold, [None] * len(prompts))}
    fresh(server)
    out["one server, the requests in run order"] = ([ask(server, p) for p in prompts], [None, *prompts[:-1]])
    fresh(server)
    rev = [ask(server, p) for p in reversed(prompts)][::-1]
    out["one server, the requests in reverse order"] = (rev, [*prompts[1:], None])
    twice = []
    for p in prompts:  # each request right after itself on a fresh server: the whole prompt is reused
        fresh(server)
        ask(server, p)
        twice.append(ask(server, p))
    out["each request sent twice to a fresh server, the second answer compared"] = (twice, list(prompts))
    return out


def in_process_conditions(prompts: list[str]) -> list[dict[str, Any]]:
    """Which llama.cpp settings change the effect: the same prompts through llama_cpp.Llama in this process (what
    the server runs), cold (a reset before each) against the run order, for several context settings."""
    from llama_cpp import Llama

    from mcqa_toolkit.backends.hf.loading import embedded_gguf

    settings = {"as the server runs it": {}, "full-size sliding-window cache (swa_full)": {"swa_full": True},
                "n_ctx 4096": {"n_ctx": 4096},
                "batches of 8 tokens (n_batch, n_ubatch 8)": {"n_batch": 8, "n_ubatch": 8},
                "flash attention": {"flash_attn": True}}
    rows = []
    for name, kw in settings.items():
        llm = Llama(**{"model_path": str(embedded_gguf("gemma-3-270m")), "n_ctx": 512, "n_threads": 2,
                       "logits_all": True, "verbose": False, **kw})

        def top(p: str, llm: Llama = llm) -> dict[str, float]:
            got = llm.create_completion(p, max_tokens=1, logprobs=TOP_K, temperature=0.0)
            return {t: float(v) for t, v in got["choices"][0]["logprobs"]["top_logprobs"][0].items()}

        cold = []
        for p in prompts:
            llm.reset()
            cold.append(top(p))
        llm.reset()
        warm = [top(p) for p in prompts]
        rows.append({"setting": name, **compare(cold, warm, prompts, [None, *prompts[:-1]])})
        del llm
    return rows


def short_items():
    sys.path.insert(0, str(REPO / "tests" / "faults"))
    sys.path.insert(0, str(REPO / "tests"))
    from test_server_killed import ITEMS, STRATEGY

    return ITEMS, ITEMS, STRATEGY


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=2, shuffles=4)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    pool, evaluated, source = workload_items(args)
    long_st = Strategy(name="server_history", method="first_token", style=args.style, shots=args.shots,
                       shot_rule=args.rule, shot_ids=tuple(args.shot_ids), shuffles=args.shuffles)
    workloads = {"short questions (tests/faults/test_server_killed.py)": short_items(),
                 f"enem-long ({args.items} items x {args.shuffles} shuffles, 4 shots)":
                     (evaluated[: args.items], pool, long_st)}
    rows, conditions = [], []
    load = {"before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="server_history_") as tmp, LlamaServer(Path(tmp), n_ctx=4096) as server:
        for k, (name, (items, shots, st)) in enumerate(workloads.items()):
            prompts = captured_prompts(server, items, shots, st, Path(tmp) / f"w{k}")
            found = histories(server, prompts)
            cold = found.pop("fresh")[0]
            for history, (got, previous) in found.items():
                row = {"choice": "llama.cpp server: warm vs fresh", "scoring": "letters",
                       "baseline": "a fresh server per request", "variant": f"{history}; {name}",
                       **compare(cold, got, prompts, previous)}
                rows.append(row)
                print(row, flush=True)
            if k == 0:  # the short questions: which llama.cpp settings change the effect
                try:
                    conditions = in_process_conditions(prompts)
                except Exception as e:  # kept in the JSON as what happened; the server rows stand on their own
                    conditions = [{"error": f"{type(e).__name__}: {e}"}]
                print(conditions, flush=True)
    load["after"] = os.getloadavg()[0]
    write_json(args.json, {"date": datetime.date.today().isoformat(),
                           "command": "python benchmarks/server_history.py " + " ".join(
                               a if a != args.json else "JSON" for a in sys.argv[1:]),
                           "server": "llama-cpp-python " + _version(), "model": "gemma-3-270m Q4_K_M GGUF",
                           "top_k": TOP_K, "threads": 2, "load_1min": load, "workload_source": source, "rows": rows,
                           "conditions": conditions})


def _version() -> str:
    import importlib.metadata as md

    return md.version("llama_cpp_python")


if __name__ == "__main__":
    main()
