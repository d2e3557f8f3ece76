"""The vLLM side of vs_vllm.py, run by vLLM's own Python (.venv-vllm) as a subprocess: the project's run() with the
in-process vLLM backend (backends/vllm.py) on the same items and strategies as our side, scoring time only.

It takes one JSON argument (written by vs_vllm.py): the model, the vllm.LLM engine arguments, the workload
arguments (to rebuild the same items with _workload.workload_items), the runs (name, strategy fields, number of
items, whether continuation scoring reads the prefix cache) and the output folder. The engine is started once
(timed apart); before each run vLLM's prefix cache is emptied, so no run reads what an earlier one computed. It
prints one JSON line: per run, seconds, the 1-minute load average before and after it, the backend's usage during
it (calls, requests, prompt / cached / rescored tokens) and its records folder.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

try:  # run as a script (python benchmarks/_vllm_side.py) or as a module
    from _workload import workload_items
except ModuleNotFoundError:
    from benchmarks._workload import workload_items


def main() -> None:
    spec = json.loads(sys.argv[1])
    from mcqa_toolkit.backends import load_backend
    from mcqa_toolkit.run import run, strategy

    args = argparse.Namespace(**spec["workload"])
    pool, evaluated, source = workload_items(args)
    t0 = time.perf_counter()
    backend = load_backend({"backend": "vllm", "model": spec["model"], "name": spec["name"], **spec["engine"]})
    start_s = time.perf_counter() - t0
    out = {"start_s": start_s, "source": source, "runs": {}, "provenance": backend.provenance()}
    for r in spec["runs"]:
        if hasattr(backend, "read_prefix_cache"):  # the backend of this checkout (older ones lack the switch)
            backend.read_prefix_cache = r["reuse"] and backend.can_read_prefix_cache
        reset = getattr(backend.llm, "reset_prefix_cache", None)
        if reset is not None:
            reset()
        before = backend.usage()
        folder = Path(spec["out"]) / r["name"]
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        run(evaluated[: r["items"]], backend, strategy(r["strategy"]), folder, shot_pool=pool, dataset="vs_vllm",
            progress=False)
        seconds = time.perf_counter() - t0
        after = backend.usage()
        out["runs"][r["name"]] = {"seconds": seconds, "records": str(folder), "load_1min": [load, os.getloadavg()[0]],
                                  "reads_prefix_cache": bool(getattr(backend, "read_prefix_cache", False)),
                                  "usage": {k: v - before.get(k, 0) for k, v in after.items()}}
        print(f"[vllm] {r['name']}: {seconds:.1f}s", file=sys.stderr, flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
