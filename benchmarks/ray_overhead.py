"""Ray's overhead against in-process on the embedded model with one worker, measured in one run.

The same run (the demo exam in --language, enem_0shot letters, --shuffles option orders, the first --limit items)
is timed in this process (run.runner.run on the embedded Gemma-3-270M loaded here, fp32, CPU) and through a RayPool
of one worker holding the same model with as many threads (`resources: {num_cpus: --threads}`: torch in a Ray
worker uses as many threads as its CPUs). The two are interleaved --repeats times (in-process, pool, in-process,
pool, ...) so both see the same machine, each repeat on renewed backends (empty KV caches, as a new run has); the
medians are compared: overhead = pool / in-process - 1. One-time costs are reported apart: joining the cluster (or
starting the local one) and the worker's start with its model load. Records are checked equal by the equality
rule (n_forwarded_tokens ignored: the worker encodes the run prefix itself). Run it with OPENBLAS_NUM_THREADS=1,
as `mcqa run`'s kernel has it (run/session.py): numpy's spinning BLAS threads beside torch's slow the in-process
side otherwise, and the local cluster's worker inherits the setting.

    OPENBLAS_NUM_THREADS=1 python benchmarks/ray_overhead.py [--address local] [--limit 8] [--shuffles 4]
                                      [--repeats 3] [--threads 2] [--json results/benchmarks/ray_overhead.json]
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.equality import record_differences
from mcqa_toolkit.run.pool import RayPool
from mcqa_toolkit.run.runner import run
from mcqa_toolkit.run.strategy import strategy

try:  # run as a script (python benchmarks/ray_overhead.py) or as a module (python -m benchmarks.ray_overhead)
    import _latency
except ModuleNotFoundError:
    from benchmarks import _latency


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default="local", help="a Ray cluster (auto, HOST:PORT, ray://...) or local")
    ap.add_argument("--language", default="pt")
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--shuffles", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="torch threads on both sides")
    ap.add_argument("--json", help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    made = _latency.local_cluster_env() if args.address == "local" else {}
    os.environ.update(made)
    items = load("demo", language=args.language)
    st = strategy("enem_0shot", shuffles=args.shuffles)
    load_avg = {"before": os.getloadavg()[0]}
    out = Path(tempfile.mkdtemp(prefix="ray_overhead_"))
    local = load_backend({"model": "gemma-3-270m", "device": "cpu", "dtype": "float32"})
    entry = {"model": "gemma-3-270m", "device": "cpu", "dtype": "float32", "resources": {"num_cpus": args.threads}}
    times: dict[str, list[float]] = {"inprocess": [], "pool": []}
    try:
        t0 = time.perf_counter()
        with RayPool(args.address, 1) as pool:
            connect_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            pool.backend(entry)
            start_s = time.perf_counter() - t0
            for k in range(args.repeats):
                for side in ("inprocess", "pool"):
                    backend = local.renew() if side == "inprocess" else pool.backend(entry)
                    t0 = time.perf_counter()
                    records = run(items, backend, st, out / f"{side}{k}" / "run", dataset="demo", limit=args.limit,
                                  progress=False)
                    times[side].append(time.perf_counter() - t0)
                    if side == "inprocess":
                        reference = records
                    else:
                        diffs = record_differences(reference, records, ignore=["n_forwarded_tokens"])
                        assert not diffs, diffs
    finally:
        shutil.rmtree(out, ignore_errors=True)
        if made:
            shutil.rmtree(made["RAY_TMPDIR"], ignore_errors=True)
    load_avg["after"] = os.getloadavg()[0]
    med = {side: statistics.median(v) for side, v in times.items()}
    overhead = med["pool"] / med["inprocess"] - 1
    result = {"date": time.strftime("%Y-%m-%d"), "command": "python benchmarks/ray_overhead.py " + " ".join(
        argv if argv is not None else sys.argv[1:]), "address": args.address, "items": args.limit,
        "shuffles": args.shuffles, "records": len(records), "threads": args.threads, "repeats": args.repeats,
        "seconds": times, "median_seconds": med, "overhead": round(overhead, 4),
        "per_block_overhead_s": (med["pool"] - med["inprocess"]) / args.limit, "connect_s": connect_s,
        "worker_start_and_load_s": start_s, "load_1min": load_avg, "cpus": os.cpu_count(),
        "python": platform.python_version(), "torch": torch.__version__}
    print(f"RESULT ray_overhead inprocess_s={med['inprocess']:.2f} pool_s={med['pool']:.2f} "
          f"overhead={overhead:+.1%} per_block_ms={1000 * result['per_block_overhead_s']:.1f} "
          f"connect_s={connect_s:.1f} worker_start_and_load_s={start_s:.1f} records={len(records)} "
          f"load_before={load_avg['before']:.2f} load_after={load_avg['after']:.2f}", flush=True)
    _latency.save_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
