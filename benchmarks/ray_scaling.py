"""Ray pool scaling on a latency-bound backend: the same run at 1, 2 and 4 workers, in one run.

Workload: a synthetic exam of --items single-answer questions x --shuffles option orders under enem_0shot's
letters (one block, one backend call, per item), scored through run.runner.run by a RayPool whose workers hold
_latency.LatencyBackend (--delay seconds per call, answers from a table). Each pool is started and every worker
made ready before its run is timed (a short warm-up run first); the timed run is the whole run() call: planning,
the blocks out and back, the records written and compacted. Optionally (--inprocess) the same run without Ray, for
reference. Records are checked equal across pool sizes (records.equality, n_forwarded_tokens ignored).

efficiency(N) = seconds(1 worker) / (N x seconds(N workers)); the pool scales when it is >= 0.8 for every N.
The load average (1 minute) is read before and after: the run sleeps more than it computes, so it can be measured
on a busy machine, but say under what load.

    python benchmarks/ray_scaling.py [--address local] [--items 200] [--shuffles 5] [--delay 0.05]
                                     [--workers 1 2 4] [--inprocess] [--json results/benchmarks/ray_scaling.json]
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mcqa_toolkit.records.equality import record_differences
from mcqa_toolkit.run.pool import RayPool
from mcqa_toolkit.run.runner import run
from mcqa_toolkit.run.strategy import strategy

try:  # run as a script (python benchmarks/ray_scaling.py) or as a module (python -m benchmarks.ray_scaling)
    import _latency
except ModuleNotFoundError:
    from benchmarks import _latency


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", default="local", help="a Ray cluster (auto, HOST:PORT, ray://...) or local")
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--shuffles", type=int, default=5)
    ap.add_argument("--delay", type=float, default=0.05, help="seconds per backend call")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--inprocess", action="store_true", help="also time the run without Ray")
    ap.add_argument("--json", help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    made = _latency.local_cluster_env() if args.address == "local" else {}
    os.environ.update(made)
    items, table = _latency.synthetic_exam(args.items)
    st = strategy("enem_0shot", shuffles=args.shuffles)
    load = {"before": os.getloadavg()[0]}
    out = Path(tempfile.mkdtemp(prefix="ray_scaling_"))
    seconds: dict[int, float] = {}
    pools: dict[str, dict] = {}  # each timed run's pool as its provenance records it (blocks per worker, copies)
    reference = None
    connection = RayPool(args.address, max(args.workers))  # one connection (or local cluster) for every pool
    connection.connect()
    _latency.ship()
    try:
        if args.inprocess:
            t0 = time.perf_counter()
            run(items, _latency.LatencyBackend(table, args.delay), st, out / "inprocess", dataset="synthetic",
                progress=False)
            seconds[0] = time.perf_counter() - t0
        for n in args.workers:
            with RayPool(args.address, n) as pool:
                pool.put("latency", functools.partial(_latency.LatencyBackend, table, args.delay))
                backend = pool.backend("latency")
                if pool.wait_for_workers(timeout=600) != n:
                    raise SystemExit(f"only some of the {n} workers started: does the cluster have {n} free CPUs?")
                run(items[:2 * n], backend, st, out / f"warm{n}", dataset="synthetic", progress=False)
                t0 = time.perf_counter()
                records = run(items, backend, st, out / f"pool{n}", dataset="synthetic", progress=False)
                seconds[n] = time.perf_counter() - t0
                pools[str(n)] = json.loads((out / f"pool{n}" / "provenance.json").read_text())["pool"]
            assert len(records) == args.items * args.shuffles, len(records)
            if reference is None:
                reference = records
            diffs = record_differences(reference, records, ignore=["n_forwarded_tokens", "run_id"])
            assert not diffs, diffs
    finally:
        connection.close()
        shutil.rmtree(out, ignore_errors=True)
        if made:
            shutil.rmtree(made["RAY_TMPDIR"], ignore_errors=True)
    load["after"] = os.getloadavg()[0]
    base = seconds[args.workers[0]] * args.workers[0]
    efficiency = {n: base / (n * seconds[n]) for n in args.workers}
    result = {"date": time.strftime("%Y-%m-%d"), "command": "python benchmarks/ray_scaling.py " + " ".join(
        argv if argv is not None else sys.argv[1:]), "address": args.address, "items": args.items,
        "shuffles": args.shuffles, "delay_s": args.delay, "records": args.items * args.shuffles,
        "seconds_inprocess": seconds.get(0), "seconds": {str(n): seconds[n] for n in args.workers},
        "efficiency": {str(n): round(e, 3) for n, e in efficiency.items()},
        "ideal_seconds_one_worker": args.items * args.delay, "pools": pools, "load_1min": load,
        "cpus": os.cpu_count(), "python": platform.python_version()}
    print("RESULT ray_scaling " + " ".join(f"workers={n} s={seconds[n]:.2f} efficiency={efficiency[n]:.2f}"
                                          for n in args.workers)
          + (f" inprocess_s={seconds[0]:.2f}" if 0 in seconds else "")
          + f" min_efficiency={min(efficiency.values()):.2f} load_before={load['before']:.2f}"
          f" load_after={load['after']:.2f}", flush=True)
    _latency.save_json(args.json, result)
    return result


if __name__ == "__main__":
    main()
