"""Time the README's first command as a newcomer meets it: a fresh clone, then `make demo` (install included).

    python benchmarks/make_demo.py --json results/benchmarks/make_demo_<date>_<commit>.json [--ref HEAD]

The clone is of a committed revision (`--ref`, default HEAD), in a temporary folder, with an empty model cache
(MCQA_CACHE), so that the embedded model is dequantised as on a new machine, and without pip's or uv's caches (every
package is fetched again). `make install` (what `make demo` installs) and `make demo` are timed apart; the demo's
own lines give the rest of the phases: the model's first load (the first run holds it), each run, each report
notebook. The raw file records the commit, the machine (cores, 1-minute load before and after) and the exit
status; the README's sentence is rendered from it (scripts/pages/readme.py).
"""
from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import REPO, write_json  # noqa: E402

RUN_LINE = re.compile(r"^\[\s*(\d+)/(\d+)\]\s+(\d+) s\s+(\S+)")
REPORT_LINE = re.compile(r"^\s*report (\S+)\s+(\d+) s\s+(.*)$")
MODEL_LINE = re.compile(r"model (\S+) ready in ([\d.]+) s")


def phases(output: str) -> dict:
    """The demo's phases from what `mcqa demo` prints: each run's and each report notebook's seconds."""
    runs = [{"run": m[4], "seconds": int(m[3])} for m in map(RUN_LINE.match, output.splitlines()) if m]
    reports = [{"notebook": m[1], "seconds": int(m[2]), "status": m[3].split(";")[0].strip()}
               for m in map(REPORT_LINE.match, output.splitlines()) if m]
    models = [{"model": m[1], "seconds": float(m[2])} for m in MODEL_LINE.finditer(output)]
    return {"runs": runs, "report_notebooks": reports, "model_loads": models,
            "runs_seconds": sum(r["seconds"] for r in runs), "report_seconds": sum(r["seconds"] for r in reports)}


def _timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return time.perf_counter() - t0, proc.returncode, proc.stdout


def measure(ref: str, work: Path) -> dict:
    """Clone `ref` into `work`, then time `make install` and `make demo` there; the raw result."""
    commit = subprocess.run(["git", "rev-parse", ref], cwd=REPO, capture_output=True, text=True, check=True).stdout
    clone, cache = work / "mcqa_toolkit", work / "cache"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(clone)], check=True)
    subprocess.run(["git", "checkout", "--quiet", commit.strip()], cwd=clone, check=True)
    env = {**os.environ, "MCQA_CACHE": str(cache), "PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1",
           "UV_CACHE_DIR": str(work / "uv-cache"), "MAKEFLAGS": ""}
    env.pop("VIRTUAL_ENV", None)
    load_before = os.getloadavg()[0]
    install_s, install_rc, install_out = _timed(["make", "install"], clone, env)
    demo_s, demo_rc, demo_out = _timed(["make", "demo"], clone, env) if install_rc == 0 else (0.0, -1, "")
    expected = {"page": "outputs/demo/report.html", "figures": "figures/demo", "latex": "latex/demo"}
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=clone, capture_output=True,
                           text=True).stdout.strip()
    return {
        "what": "make demo from a fresh clone, install included: git clone, `make install` (what make demo installs) "
                "and `make demo`, with an empty MCQA_CACHE (the embedded model dequantised as on a new machine) and "
                "no pip/uv cache (every package fetched again)",
        "commit": commit.strip(), "date": datetime.date.today().isoformat(),
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "load_1min_before": round(load_before, 2),
                    "load_1min_after": round(os.getloadavg()[0], 2)},
        "install_seconds": round(install_s, 1), "install_exit": install_rc,
        "demo_seconds": round(demo_s, 1), "demo_exit": demo_rc,
        "total_seconds": round(install_s + demo_s, 1),
        "demo": phases(demo_out),
        "outputs_present": {k: (clone / v).exists() and (not (clone / v).is_dir() or any((clone / v).iterdir()))
                            for k, v in expected.items()},
        "tracked_files_changed": dirty.splitlines(),
        "output_tail": "\n".join((install_out if install_rc else demo_out).splitlines()[-25:]),
        "goal_seconds": 360,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", default="HEAD", help="the committed revision to clone (default HEAD)")
    ap.add_argument("--json", help="write the raw result here (results/benchmarks/make_demo_<date>.json)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="make_demo_") as tmp:
        result = measure(args.ref, Path(tmp))
    write_json(args.json, result)
    d = result["demo"]
    print(f"install {result['install_seconds']:.0f} s (exit {result['install_exit']}), "
          f"demo {result['demo_seconds']:.0f} s (exit {result['demo_exit']}; runs {d['runs_seconds']} s "
          f"over {len(d['runs'])}, report {d['report_seconds']} s), "
          f"total {result['total_seconds']:.0f} s; outputs {result['outputs_present']}")
    return 0 if result["demo_exit"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
