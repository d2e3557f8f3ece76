"""The vLLM side of vs_vllm.py, run by vLLM's own Python (.venv-vllm) as a subprocess that stays up for the whole
comparison, so the two sides' runs can alternate: the project's run() with the in-process vLLM backend
(backends/vllm.py) on the same items and strategies as our side, scoring time only.

It takes one JSON argument (written by vs_vllm.py): the model, the vllm.LLM engine arguments, the workload
arguments (to rebuild the same items with _workload.workload_items) and the output folder. It starts the engine
(timed apart) with torch.compile allowed unless the arguments say `enforce_eager`; if that start fails it starts
again in eager mode and says why (`compile_error`). It then prints one JSON line (`ready`: start seconds, whether
it compiles, the threads it runs with: torch's, OMP_NUM_THREADS, the CPUs it may use) and answers each JSON line
on its standard input (a run: name, strategy fields, number of items, whether continuation scoring reads the
prefix cache) with one JSON line: seconds, the 1-minute load average before and after, the process's CPU seconds
over the run's seconds (the cores it kept busy), torch's threads inside the run, the backend's usage during it
(calls, requests, prompt / cached / rescored tokens) and its records folder. Before each run vLLM's prefix cache
is emptied, so no run reads what an earlier one computed. An empty line or end of input stops it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

try:  # run as a script (python benchmarks/_vllm_side.py) or as a module
    from _workload import workload_items
except ModuleNotFoundError:
    from benchmarks._workload import workload_items


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children so far."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def start(spec: dict) -> tuple[object, dict]:
    """The vLLM backend and how it started: compiled where vLLM allows it, else eager with the reason."""
    from mcqa_toolkit.backends import load_backend

    entry = {"backend": "vllm", "model": spec["model"], "name": spec["name"], **spec["engine"]}
    facts: dict = {"compile": not entry.get("enforce_eager", False), "compile_error": None}
    t0 = time.perf_counter()
    try:
        backend = load_backend(entry)
    except Exception as e:  # noqa: BLE001 - any failure to compile is reported, then eager is tried
        if entry.get("enforce_eager"):
            raise
        facts.update(compile=False, compile_error=f"{type(e).__name__}: {str(e)[:500]}")
        t0 = time.perf_counter()
        backend = load_backend({**entry, "enforce_eager": True})
    facts["start_s"] = time.perf_counter() - t0
    return backend, facts


def score(backend, spec: dict, r: dict, pool, evaluated) -> dict:
    """One run, timed: the backend's usage, CPU seconds and threads during it."""
    import torch

    from mcqa_toolkit.run import run, strategy

    if hasattr(backend, "read_prefix_cache"):  # the backend of this checkout (older ones lack the switch)
        backend.read_prefix_cache = r["reuse"] and backend.can_read_prefix_cache
    reset = getattr(backend.llm, "reset_prefix_cache", None)
    if reset is not None:
        reset()
    before = backend.usage()
    folder = Path(spec["out"]) / r["name"]
    load, cpu = os.getloadavg()[0], cpu_seconds()
    t0 = time.perf_counter()
    run(evaluated[: r["items"]], backend, strategy(r["strategy"]), folder, shot_pool=pool, dataset="vs_vllm",
        progress=False)
    seconds = time.perf_counter() - t0
    after = backend.usage()
    return {"seconds": seconds, "records": str(folder), "load_1min": [load, os.getloadavg()[0]],
            "cores_busy": (cpu_seconds() - cpu) / seconds, "torch_threads": torch.get_num_threads(),
            "reads_prefix_cache": bool(getattr(backend, "read_prefix_cache", False)),
            "usage": {k: v - before.get(k, 0) for k, v in after.items()}}


def main() -> None:
    import torch

    spec = json.loads(sys.argv[1])
    args = argparse.Namespace(**spec["workload"])
    pool, evaluated, source = workload_items(args)
    backend, facts = start(spec)
    ready = {**facts, "source": source, "provenance": backend.provenance(), "torch_threads": torch.get_num_threads(),
             "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "cpus_allowed": len(os.sched_getaffinity(0))}
    print(json.dumps({"ready": ready}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        r = json.loads(line)
        print(json.dumps({"run": r["name"], **score(backend, spec, r, pool, evaluated)}), flush=True)
        print(f"[vllm] {r['name']} done", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
