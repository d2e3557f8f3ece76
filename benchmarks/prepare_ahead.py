"""Whether preparing the next block while this one is scored (run.pipeline; HFBackend's `prepare_ahead`) pays on
this device: the project's run() on the same items with it off and on, alternating over `--rounds`, the records
compared (they must be equal: only where the tokenisation happens changes).

Workload: the other benchmarks' (_workload.py; enem-long by default), letters (first_token) or options (loglik),
`--items` items x `--shuffles` shuffles, the device's engine budget (`--items-per-call` to bring several items per
call). Each run starts from a renewed backend (empty KV-prefix and token caches), so every run tokenises the same;
one untimed run first takes the process's own warm-up (benchmarks/first_item.py), which would fall on one mode.

    python benchmarks/prepare_ahead.py [--items 6] [--rounds 2] [--scorings letters] [--json out.json]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.run import Strategy, run

try:  # run as a script or as a module
    from _reference import device_facts
    from _results import write_json
    from _workload import add_arguments, engine_options, scorings, setup
except ModuleNotFoundError:
    from benchmarks._reference import device_facts
    from benchmarks._results import write_json
    from benchmarks._workload import add_arguments, engine_options, scorings, setup

METHODS = {"letters": {"method": "first_token"}, "options": {"method": "loglik", "normalization": "sum"}}


def strategy(args: argparse.Namespace, scoring: str) -> Strategy:
    """The scoring's strategy on the workload's shots, by the workload's rule (as vs_vllm.py)."""
    return Strategy(name=f"prepare_ahead_{scoring}", shuffles=args.shuffles, style=args.style, shots=args.shots,
                    shot_rule=args.rule, shot_ids=tuple(args.shot_ids or ()), **METHODS[scoring])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=6, shuffles=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    lm, pool, evaluated = setup(args)
    options = engine_options(args)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for scoring in scorings(args):
            st = strategy(args, scoring)
            seconds: dict[str, list[float]] = {"off": [], "on": []}
            frames = {}
            run(evaluated, HFBackend(lm, **options), st, Path(tmp) / f"{scoring}_warm", shot_pool=pool,
                dataset="prepare_ahead", progress=False)
            for r in range(args.rounds):
                for mode in (("off", "on") if r % 2 == 0 else ("on", "off")):
                    backend = HFBackend(lm, prepare_ahead=mode == "on", **options)
                    t0 = time.perf_counter()
                    frames[mode] = run(evaluated, backend, st, Path(tmp) / f"{scoring}_{mode}_{r}", shot_pool=pool,
                                       dataset="prepare_ahead", progress=False)
                    seconds[mode].append(time.perf_counter() - t0)
                    print(f"[{scoring}] round {r} prepare_ahead {mode}: {seconds[mode][-1]:.2f} s", flush=True)
            assert_same_records(frames["off"], frames["on"], atol=0.0, ignore=["run_id", "seconds"])
            med = {m: statistics.median(v) for m, v in seconds.items()}
            results[scoring] = {"seconds": seconds, "median_seconds": med, "on_over_off": med["on"] / med["off"],
                                "records": len(frames["on"]), "same_records": True,
                                "items_per_call": backend.items_per_call}
            print(f"[{scoring}] median off {med['off']:.2f} s, on {med['on']:.2f} s (on / off "
                  f"{med['on'] / med['off']:.3f}); records equal ({len(frames['on'])})", flush=True)
    write_json(args.json, {"args": {**vars(args), "json": "JSON" if args.json else None},
                           "device": device_facts(lm), "results": results}, lm.device, lm.tokenizer)


if __name__ == "__main__":
    main()
