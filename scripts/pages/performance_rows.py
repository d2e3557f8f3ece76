"""docs/performance.md's tables of the tree attention's row part in few calls per layer (backends/hf/tree_rows.py),
from raw files under results/benchmarks/ (every line names its file):
- `*/row_groups*.json`: benchmarks/row_groups.py --json (a call's fixed cost against its keys, by blocks per call);
- `*/rows_ab_{before,after}_N.json`: benchmarks/fused_body.py --json at the commit before and after, in turn;
- `*/profile_{before,after}_letters_{dtype}_{eager,fused}.txt`: benchmarks/profile_scoring.py's launch counts.
"""
from __future__ import annotations

import re
import statistics
from pathlib import Path

from pages.blocks import REPO, date_of, read_json, rel, table

RESULTS = REPO / "results" / "benchmarks"


def row_groups() -> str:
    """row_groups: the row part's time by blocks per call, the fixed cost per call and per key, their ratio."""
    lines = []
    for path in sorted(RESULTS.glob("*/row_groups*.json")):
        raw = read_json(path)
        a, cpu = raw["args"], raw["machine"]["cpu"]
        sizes = ", ".join(f"{m}: {ms:.2f}" for m, ms in raw["by_group_size_ms"].items())
        used = raw["used"]
        lines.append(f"- {date_of(path)}, {cpu['model']} ({cpu['capability']} kernels), {a['dtype']}, "
                     f"{a['threads']} threads; {a['blocks']} blocks x {a['keys']} keys ({a['heads']} heads, "
                     f"{a['kv_heads']} KV head(s), dim {a['dim']}), ms by blocks per call: {sizes}; a call's fixed "
                     f"work {raw['fixed_us_per_call']:.0f} us, a key {raw['us_per_key_per_block']:.2f} us per "
                     f"block: a call is worth {raw['launch_keys']:.0f} padded keys; fastest at "
                     f"{raw['fastest_group_size']} blocks per call ({raw['fastest_group_keys']} keys). The engine "
                     f"uses {used['launch_keys']:.0f} and {used['group_keys']} keys. Raw file: `{rel(path)}`.")
    return "\n".join(lines) or "No raw file yet (`benchmarks/row_groups.py --json ...`)."


def _ab(folder: Path) -> str:
    """Seconds per item before and after, per dtype, scoring and body, over the interleaved rounds."""
    sides = {side: [read_json(p) for p in sorted(folder.glob(f"rows_ab_{side}_*.json"))]
             for side in ("before", "after")}
    if not sides["before"] or not sides["after"]:
        return ""
    rows = []
    first = sides["before"][0]
    for dtype, entry in first["dtypes"].items():
        for scoring in ("letters", "options"):
            if scoring not in entry:
                continue
            for body in ("eager", "fused"):
                got = {side: [r["dtypes"][dtype][scoring][body]["s_per_item"] for r in runs]
                       for side, runs in sides.items()}
                ratio = statistics.mean(got["after"]) / statistics.mean(got["before"])
                rows.append([dtype, scoring, body, " / ".join(f"{x:.2f}" for x in got["before"]),
                             " / ".join(f"{x:.2f}" for x in got["after"]), f"{ratio:.2f}"])
    commits = {side: sorted({r["machine"]["commit"]["sha"][:7] for r in runs}) for side, runs in sides.items()}
    w, cpu = first["workload"], first["cpu"]
    return (table(["dtype", "scoring", "body", "before s/item (rounds)", "after s/item (rounds)", "after / before"],
                  rows, "lllrrr")
            + f"\n\n{date_of(folder)}, {cpu['model']} ({cpu['capability']} kernels), {w['workload']}: "
            f"{w['items']} items ({w['items'] - 1} timed) x {w['shuffles']} shuffles, {w['shots']} shots; before "
            f"{', '.join(commits['before'])}, after {', '.join(commits['after'])}, runs in turn (before, after, "
            f"before, after). Raw files: `{rel(folder)}/rows_ab_*.json`.")


def _launches(folder: Path) -> str:
    """Kernel-launching ops per forward call (and of each call) and per item, before and after."""
    rows = []
    for path in sorted(folder.glob("profile_before_letters_*.txt")):
        name = re.fullmatch(r"profile_before_letters_(\w+)_(eager|fused)\.txt", path.name)
        after = path.with_name(path.name.replace("_before_", "_after_"))
        if not (name and after.exists()):
            continue
        dtype, body = name.groups()
        got = []
        for p in (path, after):
            m = re.search(r"kernel-launching ops: (\d+) per forward call \(([\d, ]+) in the calls in turn\), "
                          r"(\d+) per item", p.read_text(encoding="utf-8"))
            assert m, p
            got.append((m.group(1), m.group(2), m.group(3)))
        rows.append([dtype, body, f"{got[0][0]} -> {got[1][0]}", f"({got[0][1]}) -> ({got[1][1]})",
                     f"{got[0][2]} -> {got[1][2]}"])
    if not rows:
        return ""
    return (table(["dtype", "body", "per forward call", "each call (item prefix, tree)", "per item"], rows, "llrrr")
            + f"\n\nLetters, one profiled item after a warm one. Raw files: `{rel(folder)}/profile_*_letters_*.txt`.")


def rows_before_after() -> str:
    """Per folder with before/after files: the speed table and the launch counts."""
    folders = sorted({p.parent for p in RESULTS.glob("*/rows_ab_*.json")})
    parts = [x for f in folders for x in (_ab(f), _launches(f)) if x]
    return "\n\n".join(parts) or "No raw files yet (rows_ab_*.json beside profile_{before,after}_letters_*.txt)."
