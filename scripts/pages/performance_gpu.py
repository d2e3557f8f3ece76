"""docs/performance.md's tables of the round-5 engine on a GPU, from the raw files a lent machine wrote (every row
names its file):
- `*/speed_*.json` on CUDA with the references of benchmarks/_reference.py: rendered by
  pages/performance_engine.vs_lm_eval, as the CPU's are (the round-3 files, with `frac`, are pages/performance.py's);
- `*/throughput_*.json` on CUDA: benchmarks/scoring_throughput.py --json on a whole exam, at the default budget and
  at a wider one (the budget is in the file: `items_per_call`, `max_batch_tokens`, `max_batch_rows`);
- `*/profile_*.txt` beside them: benchmarks/profile_scoring.py's lines (host-side times: on a GPU a phase that
  synchronises also holds the wait for the device);
- `gpu_busy_smi.csv` + `gpu_busy_log.txt`: nvidia-smi's utilisation samples (timestamp, %, W) and the benchmark's
  lines stamped with the wall-clock time they were printed; the engine's scoring window of a model starts at its
  `GEMM` line and lasts the `ours N s` its `[letters]` line reports.
MFU is the file's own (the useful FLOPs of the shape over the datasheet peak it names); tests/test_render_docs.py
checks it against the shape's FLOPs.
"""
from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from pages.blocks import REPO, date_of, notes_under, read_json, rel, table
from pages.performance_engine import mfu_cell, parse_profile, vs_lm_eval

RESULTS = REPO / "results" / "benchmarks"
SAMPLE_S = 0.1  # nvidia-smi's sampling period in the busy files (-lms 100)


def _cuda(pattern: str) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for path in sorted(RESULTS.glob(pattern)):
        raw = read_json(path)
        if raw["args"]["device"] == "cuda":
            out.append((path, raw))
    return out


def exam() -> str:
    """scoring_throughput on a GPU over a whole exam, per budget: s/item, calls, unique tok/s, the ratio to the
    body's forward rate, forwarded tok/s inside the body's calls (host time of the calls), MFU."""
    rows = []
    files = _cuda("*/throughput_*.json")
    for path, raw in files:
        for scoring, r in raw["results"].items():
            given = any(raw["args"].get(k) is not None
                        for k in ("items_per_call", "max_batch_tokens", "max_batch_rows"))
            budget = (f"{'set' if given else 'default'}: {r['items_per_call']} / {r['max_batch_tokens']:,} / "
                      f"{r['max_batch_rows']:,}")
            rows.append([date_of(path), raw["device"]["device"], raw["args"]["random_shape"], scoring,
                         f"{r['items']} x {raw['args']['shuffles']}", budget, f"{r['calls']}",
                         f"{r['s_per_item_ours']:.3f}", f"{r['unique_tok_s']:,.0f}",
                         f"{r['vs_body_full_rows']['vs_best']:.2f} / {r['vs_body_short_rows']['vs_best']:.2f}",
                         f"{r['body_tok_s']:,.0f}", mfu_cell(r), f"`{rel(path)}`"])
    if not rows:
        return "No raw file yet (`benchmarks/scoring_throughput.py --device cuda --json ...`)."
    return table(["date", "device", "model", "scoring", "items x shuffles", "budget: items per call / slots / rows",
                  "forward calls", "s/item", "unique tok/s", "ours / body forward rate (full rows / 256-token rows)",
                  "forwarded tok/s inside the body's calls (host time)", "MFU", "raw file"], rows,
                 "lllllrrrrrrrl") + notes_under(files)


PHASE_COLUMNS = (("rendering", "rendering"), ("tokenisation", "tokenisation"), ("plan + masks + cache", None),
                 ("body (host)", "mcqa::body"), ("head (host)", "mcqa::head"),
                 ("glue", "other (Python glue in score)"))


def profiles() -> str:
    """profile_scoring on a GPU: wall and host-side ms per item by phase, and the host phases' total."""
    rows = []
    for path in sorted(RESULTS.glob("*/profile_*.txt")):
        p = parse_profile(path)
        if not p or not re.search(r" on cuda", path.read_text(encoding="utf-8")):
            continue
        ph = p["phases"]
        cells = []
        for _, name in PHASE_COLUMNS:
            seconds = ph[name] if name else sum(ph[k] for k in ("mcqa::plan", "mcqa::masks", "mcqa::cache"))
            cells.append(f"{1000 * seconds:.0f}")
        rows.append([date_of(path), p["model"], p["scoring"], f"{p['items']} in {p['calls']} call(s)",
                     f"{1000 * p['wall']:.0f}", *cells, f"{p['host']:.0f}", f"`{rel(path)}`"])
    if not rows:
        return ""
    return table(["date", "model", "scoring", "items (block)", "wall ms/item",
                  *[f"{label} ms/item" for label, _ in PHASE_COLUMNS], "host phases ms/item", "raw file"], rows,
                 "llllrrrrrrrrl")


def _clock(stamp: str) -> float:
    t = datetime.strptime(stamp, "%H:%M:%S.%f")
    return t.hour * 3600 + t.minute * 60 + t.second + t.microsecond / 1e6


def _runs(flags: list[bool], value: bool) -> list[int]:
    """Lengths of the runs of `value` in `flags`."""
    out, n = [], 0
    for f in flags + [not value]:
        if f == value:
            n += 1
        elif n:
            out.append(n)
            n = 0
    return out


def busy() -> str:
    """GPU utilisation while the engine scored a whole exam: per model, the samples of its scoring window, the
    share with the GPU busy (utilization.gpu > 0), the mean utilisation, the busy bursts and idle gaps."""
    rows = []
    for csv in sorted(RESULTS.glob("*/gpu_busy_smi.csv")):
        log = csv.with_name("gpu_busy_log.txt")
        samples = []
        for line in csv.read_text(encoding="utf-8").splitlines():
            stamp, util, _ = (x.strip() for x in line.split(","))
            samples.append((_clock(stamp.split(" ")[1]), int(util.rstrip(" %"))))
        start: dict[str, float] = {}
        for line in log.read_text(encoding="utf-8").splitlines():
            stamp, model, rest = line.split(" ", 2)
            if rest.startswith("GEMM"):
                start[model] = _clock(stamp)
            m = re.match(r"\[(\w+)\] sequences=.*\| ours ([\d.]+)s", rest)
            if m and model in start:
                t0, dur = start[model], float(m.group(2))
                window = [u for t, u in samples if t0 <= t <= t0 + dur]
                on = [u > 0 for u in window]
                bursts, gaps = _runs(on, True), _runs(on, False)
                rows.append([date_of(csv), model, m.group(1), f"{dur:.1f}", f"{len(window)}",
                             f"{sum(on) / len(window):.2f}", f"{sum(window) / len(window):.0f}%",
                             f"{len(bursts)}, longest {max(bursts, default=0) * SAMPLE_S:.1f} s",
                             f"{len(gaps)}, longest {max(gaps, default=0) * SAMPLE_S:.1f} s",
                             f"`{rel(csv)}`, `{log.name}`"])
    if not rows:
        return ""
    return table(["date", "model", "scoring", "engine's scoring s", "samples", "share busy", "mean utilisation",
                  "busy bursts", "idle gaps", "raw files"], rows, "lllrrrrrrl")


def blocks() -> dict[str, str]:
    return {"perf-gpu5-speed": vs_lm_eval("cuda"), "perf-gpu5-exam": exam(),
            "perf-gpu5-profile": "\n\n".join(x for x in (profiles(), busy()) if x) or "No raw file yet."}
