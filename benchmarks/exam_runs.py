"""A whole real exam through `mcqa run`, once per params file, one after another: wall time, scoring time and the
records' agreement with the first file's.

Why: the engine's speed on the workload a researcher runs (a whole ENEM exam with INEP's item parameters), for each
engine setting and dtype (issue 59: eager / fused body, float32 / bfloat16), on one machine in one sitting. Each
params file runs as written except its `output_dir`, which is a fresh folder under a temporary directory. Per file:
the wall time of its `mcqa run` process (model load, the self-check, the fused body's compile, scoring), per run
the sum of its records' `seconds` (scoring) and the engine's path and `fused` from its provenance; per run against
the same run of the first file: records.compare_runs.score_delta (the largest |delta| of the option scores, the
share of the same choice). Timings are of a machine doing nothing else: run it alone.

    python benchmarks/exam_runs.py results/benchmarks/engine6_2026-12-04/exam_{float32,bfloat16}_{eager,fused}.yaml
        [--reverse] [--json out.json]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

try:  # run as a script (python benchmarks/exam_runs.py) or as a module
    import _machine
    from _results import write_json
except ModuleNotFoundError:
    from benchmarks import _machine
    from benchmarks._results import write_json


def run_params(params: Path, out: Path) -> float:
    """Run `params` with its output under `out`; the wall seconds of the `mcqa run` process."""
    spec = yaml.safe_load(params.read_text(encoding="utf-8"))
    spec["output_dir"] = str(out)
    moved = out.parent / f"{params.stem}.yaml"
    moved.write_text(yaml.safe_dump(spec, allow_unicode=True), encoding="utf-8")
    mcqa = shutil.which("mcqa", path=str(Path(sys.executable).parent)) or "mcqa"
    t0 = time.perf_counter()
    subprocess.run([mcqa, "run", str(moved)], check=True)
    return time.perf_counter() - t0


def runs_of(out: Path) -> dict[str, Any]:
    """Per run folder under `out`: its records' count and summed seconds, the engine's path and `fused`."""
    from mcqa_toolkit.records.store import RunDir

    found = {}
    for folder in sorted(p for p in out.iterdir() if p.is_dir()):
        run = RunDir(folder)
        records = run.load()
        engine = ((run.provenance() or {}).get("model") or {}).get("engine") or {}
        found[run.name] = {"records": len(records), "scoring_seconds": float(records["seconds"].sum()),
                           "path": engine.get("path"), "fused": engine.get("fused")}
    return found


def agreement(first: Path, other: Path) -> dict[str, Any]:
    """score_delta of every run of `other` against the same run of `first` (null where `first` has none)."""
    from mcqa_toolkit.records.compare_runs import score_delta
    from mcqa_toolkit.records.store import RunDir

    out: dict[str, Any] = {}
    for folder in sorted(p for p in other.iterdir() if p.is_dir()):
        base = first / folder.name
        if not base.is_dir():
            out[folder.name] = None
            continue
        d = score_delta(RunDir(base).load(), RunDir(folder).load())
        out[folder.name] = {"records": d.records, "max_abs_delta": d.max_abs_delta, "same_choice": d.same_choice}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("params", nargs="+", type=Path, help="params files; the first is the others' reference")
    ap.add_argument("--reverse", action="store_true", help="run the files last to first (order effects: a second "
                    "sitting in the other order)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    order = list(reversed(args.params)) if args.reverse else list(args.params)
    result: dict[str, Any] = {"params": [p.as_posix() for p in args.params], "order": [p.stem for p in order],
                              "files": {}, "machine": {"commit": _machine.commit()}}  # the commit the runs ran at
    with tempfile.TemporaryDirectory(prefix="exam_runs_") as tmp:
        outs = {p.stem: Path(tmp) / p.stem / "out" for p in args.params}
        for params in order:
            out = outs[params.stem]
            out.parent.mkdir(parents=True)
            wall = run_params(params, out)
            runs = runs_of(out)
            result["files"][params.stem] = {"wall_seconds": wall, "runs": runs}
            print(f"{params.stem}: {wall:.1f} s; " + ", ".join(
                f"{k} {v['scoring_seconds']:.1f} s scoring ({v['path']}, fused {v['fused']})" for k, v in runs.items()),
                flush=True)
        first = outs[args.params[0].stem]
        for params in args.params:
            result["files"][params.stem]["vs_first"] = (agreement(first, outs[params.stem])
                                                        if params != args.params[0] else None)
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
