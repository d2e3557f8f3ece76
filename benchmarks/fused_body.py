"""The engine's fused body (`fused=True`, backends/hf/fused.py) against its eager body, measured in one run.

Per dtype (`--dtypes`) and scoring, two engines on the same model (self-check off: the body is compared, not the
check): the eager engine and the fused one. Warm-up: the eager engine scores the first item, the fused one every
item (it compiles a graph per call shape it meets: its compile seconds, by the compiler's own timing, and the
warm-up's wall time are kept); then the items after the first are scored in turn by each engine, items
interleaved, and timed (tokenisation of each item is done once, before; `compile_s_timed`: compile seconds inside
the timed calls, 0 when the warm-up met every shape). Per engine: seconds per item (the timed items), forward
calls and body seconds; between them: the largest |difference| of the log-probs and, for letters, the share of
requests with the same top candidate (for options, of items x shuffles with the same top option by summed
log-likelihood).

Start-up (`--startup`): the same script run again as a child process, twice, on an empty inductor cache folder of
its own: the first child compiles everything (what a machine's first run pays), the second loads inductor's
cache (what every later process pays); each reports the compile seconds and the first item's wall time.

    python benchmarks/fused_body.py [--items 4] [--shuffles 30] [--scorings both] [--dtypes float32 bfloat16]
        [--startup] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from mcqa_toolkit.backends.hf import compute
from mcqa_toolkit.backends.hf.engine import PrefixScorer

try:  # run as a script or as a module
    from _reference import device_facts
    from _results import write_json
    from _workload import SCORINGS, add_arguments, build, scorings, setup
except ModuleNotFoundError:
    from benchmarks._reference import device_facts
    from benchmarks._results import write_json
    from benchmarks._workload import SCORINGS, add_arguments, build, scorings, setup


def _same_choices(scoring: str, a: list, b: list) -> float:
    """Share of choices that agree: per letters request its top candidate; per options shuffle (consecutive
    requests of one prompt, four options) its top summed log-likelihood."""
    if scoring == "letters":
        pairs = [(int(np.argmax(x)), int(np.argmax(y))) for x, y in zip(a, b, strict=True)]
    else:
        sa, sb = [float(np.sum(x)) for x in a], [float(np.sum(y)) for y in b]
        pairs = [(int(np.argmax(sa[k: k + 4])), int(np.argmax(sb[k: k + 4]))) for k in range(0, len(sa), 4)]
    return sum(x == y for x, y in pairs) / len(pairs)


def compare(lm, pool, evaluated, args, scoring: str) -> dict:
    """One scoring's eager-vs-fused comparison (see the module docstring)."""
    works = [build(lm, [it], pool, args, SCORINGS[scoring], None) for it in evaluated]
    engines = {"eager": PrefixScorer(lm, check=False), "fused": PrefixScorer(lm, check=False, fused=True)}
    out: dict = {}
    scores: dict = {name: [] for name in engines}
    for name, engine in engines.items():  # eager: its first item; fused: every item (each call shape compiled)
        t0 = time.perf_counter()
        for work in works[: len(works) if engine.fused else 1]:
            engine.score_block(work)
        out[name] = {"warm_s": time.perf_counter() - t0, "compile_s": engine.stats.compile_seconds}
        engine.stats.calls, engine.stats.body_seconds, engine.stats.compile_seconds = 0, 0.0, 0.0
    seconds = {name: 0.0 for name in engines}
    for work in works[1:]:
        for name, engine in engines.items():
            t0 = time.perf_counter()
            got = engine.score_block(work)
            seconds[name] += time.perf_counter() - t0
            scores[name] += [np.asarray(v, dtype=float) for values in got for v in values]
    n = len(works) - 1
    for name, engine in engines.items():
        out[name].update(s_per_item=seconds[name] / n, calls=engine.stats.calls, body_s=engine.stats.body_seconds,
                         fused=engine.settings()["fused"], compile_s_timed=engine.stats.compile_seconds)
    out["items_timed"] = n
    out["fused_vs_eager"] = seconds["eager"] / seconds["fused"]
    out["max_abs_delta"] = max(float(np.abs(x - y).max()) for x, y in zip(scores["eager"], scores["fused"],
                                                                           strict=True))
    out["same_choice"] = _same_choices(scoring, scores["eager"], scores["fused"])
    return out


def startup(args: argparse.Namespace, dtype: str) -> dict:
    """The first and a cached start-up: this script as a child (`--child`), twice, on a fresh inductor cache."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="inductor_") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        for run in ("first", "cached"):
            cmd = [sys.executable, __file__, "--child", "--dtypes", dtype, "--scorings", "letters", "--items", "1",
                   "--shuffles", str(args.shuffles), "--threads", str(args.threads)]
            t0 = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            out[run] = {**json.loads(done.stdout.strip().splitlines()[-1]), "process_s": time.perf_counter() - t0}
    return out


def child(args: argparse.Namespace) -> None:
    """One fused engine scoring one item; prints its compile seconds and wall time as JSON."""
    lm, pool, evaluated = setup(args)
    work = build(lm, evaluated[:1], pool, args, SCORINGS["letters"], None)
    engine = PrefixScorer(lm, check=False, fused=True)
    t0 = time.perf_counter()
    engine.score_block(work)
    print(json.dumps({"item_s": time.perf_counter() - t0, "compile_s": engine.stats.compile_seconds}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=4, shuffles=30)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--startup", action="store_true", help="also measure the first and a cached start-up")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if args.child:
        args.dtype = args.dtypes[0]
        return child(args)
    result: dict = {"cpu": compute.cpu(), "dtypes": {}, "workload": {
        "workload": args.workload, "items": args.items, "shuffles": args.shuffles, "shots": args.shots}}
    for dtype in args.dtypes:
        args.dtype = dtype
        lm, pool, evaluated = setup(args)
        entry: dict = {"device": device_facts(lm)}
        for scoring in scorings(args):
            entry[scoring] = r = compare(lm, pool, evaluated, args, scoring)
            print(f"{dtype} {scoring}: eager {r['eager']['s_per_item']:.2f} s/item, fused "
                  f"{r['fused']['s_per_item']:.2f} s/item ({r['fused_vs_eager']:.2f}x; compile "
                  f"{r['fused']['compile_s']:.1f} s in the warm-up); max |delta| {r['max_abs_delta']:.2g}, same "
                  f"choice {100 * r['same_choice']:.1f}%", flush=True)
        if args.startup:
            entry["startup"] = s = startup(args, dtype)
            print(f"{dtype} start-up: first compile {s['first']['compile_s']:.1f} s (item {s['first']['item_s']:.1f}"
                  f" s), cached {s['cached']['compile_s']:.1f} s (item {s['cached']['item_s']:.1f} s)", flush=True)
        result["dtypes"][dtype] = entry
        del lm
    write_json(args.json, result)


if __name__ == "__main__":
    main()
