"""docs/performance.md's tables of the engine's host work and of its body against vLLM's (engine IV), from raw files
under results/benchmarks/ (every row names its file):
- `*/profile_before_*.txt` / `profile_after_*.txt`: benchmarks/profile_scoring.py's lines, paired by name; host ms per
  item against the same run's machine reference (the items tokenised without the run's TokenCache) where the file
  prints it;
- `*/first_item*.json`: benchmarks/first_item.py --json (one item first in a process, again, and by a new run);
- `*/prepare_ahead*.json`: benchmarks/prepare_ahead.py --json;
- `*/vllm_body*.json` and a `profile_cpu_defaults_*.txt` beside it: vLLM's body (benchmarks/vllm_body.py) and ours
  (profile_scoring's `per unique token inside mcqa::body` line) per computed token, by operator group;
  `vllm_body_NAME.json` pairs with `profile_cpu_defaults_*NAME*.txt` (e.g. one dtype's pair).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pages.blocks import REPO, date_of, notes_under, read_json, rel, table
from pages.performance_engine import parse_profile

RESULTS = REPO / "results" / "benchmarks"
GOAL = {"letters": 0.1, "options": 0.2}  # issue 49: host phases <= this share of the reference


def _ref(p: dict[str, Any]) -> str:
    return "n/a" if p["reference_tok"] is None else f"{p['reference_tok']:.0f}"


def _share(p: dict[str, Any]) -> str:
    return "n/a" if p["reference_tok"] is None else f"{p['host'] / p['reference_tok']:.3f}"


def host_before_after() -> str:
    """Pairs `profile_before_X.txt` / `profile_after_X.txt` of one folder: host and tokenisation ms per item, and
    (files that print it) the machine's reference and the host phases' share of it against the goal."""
    rows = []
    for before in sorted(RESULTS.glob("*/profile_before_*.txt")):
        after = before.with_name(before.name.replace("profile_before_", "profile_after_"))
        b, a = parse_profile(before), parse_profile(after) if after.exists() else None
        if b and a:
            goal = GOAL.get(a["scoring"])
            met = "n/a" if a["reference_tok"] is None or goal is None else (
                f"{'met' if a['host'] / a['reference_tok'] <= goal else 'not met'} (<= {goal:g})")
            rows.append([date_of(before), b["scoring"], f"{b['host']:.0f} -> {a['host']:.0f}",
                         f"{a['host'] / b['host']:.2f}", f"{b['tok']:.0f} -> {a['tok']:.0f}",
                         f"{_ref(b)} / {_ref(a)}", f"{_share(b)} -> {_share(a)}", met,
                         f"`{rel(before)}`, `{after.name}`"])
    return table(["date", "scoring", "host ms/item, before -> after", "after / before",
                  "tokenisation ms/item, before -> after", "reference ms/item (no TokenCache), before / after",
                  "host / reference, before -> after", "goal", "raw files"], rows, "llrrrrrll") if rows else ""


def first_items() -> str:
    """first_item.py: the same item first in a process (A), again in its run (B) and by a new run (C); the process
    warm-up (A - C), the run prefix inside the engine (C - B) and at the body's plain rate, and issue 49's goal."""
    rows, files = [], []
    for path in sorted(RESULTS.glob("*/first_item*.json")):
        raw = read_json(path)
        files.append((path, raw))
        for scoring, r in raw["results"].items():
            a, b, c = (r[k]["seconds"] for k in ("A_first", "B_again_same_run", "C_again_new_run"))
            bound = b + r["prefix_at_body_s"]
            rows.append([date_of(path), scoring, "yes" if r["first_in_process"] else "no", f"{a:.2f}", f"{b:.2f}",
                         f"{c:.2f}", f"{r['warm_up_s']:.2f}", f"{r['run_prefix_tokens']:,}",
                         f"{r['prefix_in_engine_s']:.2f}", f"{r['prefix_at_body_s']:.2f}",
                         f"{bound:.2f} ({'met' if r['goal_met'] else 'not met'}); a new run: "
                         f"{'met' if c <= bound else 'not met'}", f"`{rel(path)}`"])
    if not rows:
        return ""
    return table(["date", "scoring", "first in the process", "A: first s", "B: again, same run s",
                  "C: again, new run s", "process warm-up A - C s", "run prefix tokens", "prefix in the engine C - B s",
                  "prefix at the body's plain rate s", "goal A <= B + prefix at the body's rate s", "raw file"],
                 rows, "lllrrrrrrrll") + notes_under(files)


def prepare_ahead() -> str:
    """prepare_ahead.py: run() with the next block prepared in the background, off and on (median seconds)."""
    rows, files = [], []
    for path in sorted(RESULTS.glob("*/prepare_ahead*.json")):
        raw = read_json(path)
        files.append((path, raw))
        for scoring, r in raw["results"].items():
            med = r["median_seconds"]
            rows.append([date_of(path), raw["device"]["device"], scoring,
                         f"{raw['args']['items']} x {raw['args']['shuffles']}, {r['items_per_call']} per call",
                         f"{med['off']:.2f} / {med['on']:.2f}",
                         " / ".join(", ".join(f"{t:.1f}" for t in r["seconds"][m]) for m in ("off", "on")),
                         f"{r['on_over_off']:.3f}",
                         "yes" if r["same_records"] else "no", f"`{rel(path)}`"])
    if not rows:
        return ""
    return table(["date", "device", "scoring", "items x shuffles", "median s: off / on", "each run s: off / on",
                  "on / off", "records equal", "raw file"], rows, "lllrrrrll") + notes_under(files)


def _ours_per_token(path: Path) -> dict[str, float]:
    m = re.search(r"per unique token inside mcqa::body \(self CPU\): (.*?); in all (\d+) us", path.read_text())
    if not m:
        return {}
    out = {g: float(us) for g, us in re.findall(r"([\w/ ]+?) (\d+) us", m.group(1))}
    return {k.strip(): v for k, v in out.items()} | {"in all": float(m.group(2))}


def _ours_file(path: Path) -> Path | None:
    """The profile of our body paired with vLLM's file `path` (see the module's docstring)."""
    name = path.stem.removeprefix("vllm_body").lstrip("_")
    pattern = f"profile_cpu_defaults_*{name}*.txt" if name else "profile_cpu_defaults_*.txt"
    return next(iter(sorted(path.parent.glob(pattern))), None)


def body_vs_vllm() -> str:
    """Microseconds of self CPU time per computed token by operator group: vLLM's body (vllm_body.py) against ours
    (profile_scoring at the CPU defaults) on the same items."""
    parts = []
    for path in sorted(RESULTS.glob("*/vllm_body*.json")):
        raw = read_json(path)
        ours_file = _ours_file(path)
        ours = _ours_per_token(ours_file) if ours_file else {}
        theirs = {**raw["self_cpu_us_per_token"], "in all": sum(raw["self_cpu_us_per_token"].values())}
        groups = list(dict.fromkeys([*theirs, *ours]))
        groups.remove("in all")
        rows = [[g, f"{theirs[g]:.0f}" if g in theirs else "-", f"{ours[g]:.0f}" if g in ours else "-"]
                for g in [*groups, "in all"]]
        mode = "compiled" if raw["vllm"]["compile"] else "eager"
        dtype = raw["args"].get("dtype", "float32")
        fused = re.search(r", fused (\d+)\)", ours_file.read_text()) if ours_file else None
        ours_mode = "fused" if fused and int(fused.group(1)) else "eager"
        parts.append(table(["operator group", f"vLLM ({mode}, {dtype}) us per computed token",
                            f"ours ({ours_mode}, {dtype}) us per unique token"],
                           rows, "lrr") + f"\n\n{date_of(path)}: vLLM computed {raw['computed_tokens']:,} tokens in "
                     f"{raw['seconds']:.2f} s ({raw['computed_tokens'] / raw['seconds']:,.0f} tok/s) after a start-up "
                     f"of {raw['vllm']['start_s']:.0f} s ({mode} model loaded and, compiled, its graphs built); raw "
                     f"files: `{rel(path)}`" + (f", `{rel(ours_file)}`" if ours_file else "") + ".")
    return "\n\n".join(parts)


def blocks() -> dict[str, str]:
    return {"perf-first-item": first_items() or "No raw file yet.",
            "perf-prepare-ahead": prepare_ahead() or "No raw file yet.",
            "perf-body-vllm": body_vs_vllm() or "No raw file yet."}
