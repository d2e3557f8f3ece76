"""docs/performance.md's tables of the engine's host work and of its body against vLLM's (engine IV), from raw files
under results/benchmarks/ (every row names its file):
- `*/profile_before_*.txt` / `profile_after_*.txt`: benchmarks/profile_scoring.py's lines, paired by name; host ms per
  item against the same run's machine reference (the items tokenised without the run's TokenCache) where the file
  prints it;
- `*/vs_lm_eval_*.txt` (+ the `.json` beside it when written): benchmarks/vs_lm_eval.py's printed lines, the time
  of each of ours items in order (the first one pays the run prefix), and from the JSON the run prefix's tokens and
  the body's rate on full-length rows;
- `*/prepare_ahead*.json`: benchmarks/prepare_ahead.py --json;
- `*/vllm_body*.json` and a `profile_cpu_defaults_*.txt` beside it: vLLM's body (benchmarks/vllm_body.py) and ours
  (profile_scoring's `per unique token inside mcqa::body` line) per computed token, by operator group.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pages.blocks import REPO, date_of, machine_notes, read_json, rel, table
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


def _item_seconds(path: Path) -> list[float]:
    """Ours per item, in order, from vs_lm_eval's printed lines (`[scoring] item ID: ... ours 2.70s`)."""
    return [float(x) for x in re.findall(r"^\[\w+\] item \S+:.* ours ([\d.]+)s", path.read_text(encoding="utf-8"),
                                         re.M)]


def first_items() -> str:
    """vs_lm_eval's first and second item times (one item per call: the first pays the run prefix), and where the
    JSON holds them, what the run prefix costs at the body's full-row rate and lm-eval's ratio."""
    rows = []
    for path in sorted(RESULTS.glob("*/vs_lm_eval_*.txt")):
        times = _item_seconds(path)
        if len(times) < 2:
            continue
        raw = read_json(path.with_suffix(".json")) if path.with_suffix(".json").exists() else {"results": {}}
        r = next(iter(raw["results"].values()), {})
        prefix, rate = r.get("run_prefix_tokens"), (r.get("body_full_rows") or {}).get("tok_s", {}).get("best")
        cost = prefix / rate if prefix and rate else None
        bound = "n/a" if cost is None else f"{times[1] + cost:.2f} ({'met' if times[0] <= times[1] + cost else 'not met'})"
        lm = "not run" if r.get("speedup_lm") is None else (
            f"{r['speedup_lm']:.1f}x (lm-eval {r['s_lm']:.0f} s, same choices {r['same_lm']}/{r['n_lm']})")
        rows.append([date_of(path), path.stem.replace("vs_lm_eval_", ""), f"{times[0]:.2f}", f"{times[1]:.2f}",
                     "n/a" if prefix is None else f"{prefix:,}", "n/a" if cost is None else f"{cost:.2f}", bound, lm,
                     f"`{rel(path)}`"])
    return table(["date", "run", "ours, first item s", "second item s", "run prefix tokens",
                  "run prefix at the body's full-row rate s", "second + prefix s (first <= it?)", "vs lm-eval",
                  "raw file"], rows, "llrrrrrll") if rows else ""


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
                         f"{med['off']:.2f} / {med['on']:.2f}", f"{r['on_over_off']:.3f}",
                         "yes" if r["same_records"] else "no", f"`{rel(path)}`"])
    if not rows:
        return ""
    return table(["date", "device", "scoring", "items x shuffles", "median s: off / on", "on / off",
                  "records equal", "raw file"], rows, "lllrrrll") + (
        "\n\n" + machine_notes(files) if machine_notes(files) else "")


def _ours_per_token(path: Path) -> dict[str, float]:
    m = re.search(r"per unique token inside mcqa::body \(self CPU\): (.*?); in all (\d+) us", path.read_text())
    if not m:
        return {}
    out = {g: float(us) for g, us in re.findall(r"([\w/ ]+?) (\d+) us", m.group(1))}
    return {k.strip(): v for k, v in out.items()} | {"in all": float(m.group(2))}


def body_vs_vllm() -> str:
    """Microseconds of self CPU time per computed token by operator group: vLLM's body (vllm_body.py) against ours
    (profile_scoring at the CPU defaults) on the same items."""
    parts = []
    for path in sorted(RESULTS.glob("*/vllm_body*.json")):
        raw = read_json(path)
        ours_file = next(iter(sorted(path.parent.glob("profile_cpu_defaults_*.txt"))), None)
        ours = _ours_per_token(ours_file) if ours_file else {}
        theirs = {**raw["self_cpu_us_per_token"], "in all": sum(raw["self_cpu_us_per_token"].values())}
        groups = list(dict.fromkeys([*theirs, *ours]))
        groups.remove("in all")
        rows = [[g, f"{theirs[g]:.0f}" if g in theirs else "-", f"{ours[g]:.0f}" if g in ours else "-"]
                for g in [*groups, "in all"]]
        mode = "compiled" if raw["vllm"]["compile"] else "eager"
        parts.append(table(["operator group", f"vLLM ({mode}) us per computed token", "ours us per unique token"],
                           rows, "lrr") + f"\n\n{date_of(path)}: vLLM computed {raw['computed_tokens']:,} tokens in "
                     f"{raw['seconds']:.2f} s ({raw['computed_tokens'] / raw['seconds']:,.0f} tok/s); raw files: "
                     f"`{rel(path)}`" + (f", `{rel(ours_file)}`" if ours_file else "") + ".")
    return "\n\n".join(parts)


def blocks() -> dict[str, str]:
    return {"perf-first-item": first_items() or "No raw file yet.",
            "perf-prepare-ahead": prepare_ahead() or "No raw file yet.",
            "perf-body-vllm": body_vs_vllm() or "No raw file yet."}
