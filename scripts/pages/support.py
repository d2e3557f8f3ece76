"""docs/support.md's blocks: the engine's support sweep (results/tests/support_sweep.json, scripts/support_table.py)
as counts and as one row per causal-LM family of the installed transformers."""
from __future__ import annotations

from pages.blocks import REPO, read_json, rel, table

RAW = REPO / "results" / "tests" / "support_sweep.json"
FUSED = REPO / "results" / "tests" / "fused_sweep.json"
PATHS = ("cpu", "cuda", "unpacked")
SHARING = ("tree", "masks", "unpacked", "sequential")  # paths that share the run prefix (and more)


def _error(text: str) -> str:
    return "error: " + text.split(":")[0]


def _delta(r: dict, bound: float) -> str:
    if "error" in r:
        return _error(r["error"])
    d = max(r["letters"], r["options"])
    return f"{d:.1g}" + (" **wrong**" if d > bound else "")


def _kept(r: dict, bound: float) -> str:
    return _error(r["error"]) if "error" in r else f"{r['kept']} {_delta(r, bound)}"


def _generation(g: dict) -> str:
    if "plain_error" in g:
        return "transformers' own generate fails: " + g["plain_error"].split(":")[0]
    if "error" in g:
        return _error(g["error"])
    same = "same" if g["one_same"] and g["padded_same"] else \
        f"one {'same' if g['one_same'] else 'differs'}, padded {'same' if g['padded_same'] else 'differs'}"
    return f"{same}{' (run-prefix cache)' if g.get('run_prefix_cache') else ''}"


def _raw_wrong(r: dict, bound: float) -> bool:
    return any("error" not in r["raw"][p] and max(r["raw"][p]["letters"], r["raw"][p]["options"]) > bound
               for p in PATHS)


def summary() -> str:
    if not RAW.exists():
        return "No raw file yet: run `python scripts/support_table.py`."
    raw = read_json(RAW)
    rows, bound = raw["rows"], raw["exact_bound"]
    built = [r for r in rows if r["built"]]
    attention = [r for r in built if r["kind"] == "attention"]
    shared = [r for r in attention if all(r["checked"][p].get("kept") in SHARING for p in PATHS)]
    others = [r for r in built if r["kind"] in ("recurrent", "hybrid")]
    both_ways = [r for r in built if r["kind"] == "bidirectional"]
    lines = [
        f"Measured on {raw['date']} at commit {(raw['commit']['sha'] or 'unknown')[:7]}"
        f"{' + uncommitted changes' if raw['commit']['dirty'] else ''} with transformers {raw['transformers']} and "
        f"torch {raw['torch']} on {raw['cpu']['model']} ({raw['cpu']['capability']} kernels), {raw['threads']} "
        f"thread{'s' if raw['threads'] != 1 else ''} (`{rel(RAW)}`):",
        f"- {raw['families']} causal-LM model types; {len(built)} build and run at a small size, "
        f"{len(rows) - len(built)} do not (the reason is in their row);",
        f"- as a user gets them (the self-check on): {sum(r['verdict'] == 'exact' for r in built)} of {len(built)} "
        f"exact on every engine path (max \\|delta\\| <= {bound:g} against the plain forward) with the same greedy "
        f"tokens, {sum(r['verdict'] == 'wrong' for r in built)} wrong, {sum(r['verdict'] == 'error' for r in built)} "
        "ending in an error;",
        f"- attention-only families: {len(shared)} of {len(attention)} ({len(shared) / max(1, len(attention)):.0%})"
        " keep a path that shares prefixes on every engine path; recurrent and hybrid families: "
        f"{sum(all(r['checked'][p].get('kept') in SHARING for p in PATHS) for r in others)} of {len(others)} share "
        "the run prefix, the others take the plain path (their state does not continue exactly over several tokens "
        f"in transformers); encoders loaded as causal LMs, attending both ways (a position's output depends on later "
        f"tokens, so nothing can be shared): "
        f"{len(both_ways)}, on the plain path;",
        f"- with the self-check off, what each path computes by itself: {sum(_raw_wrong(r, bound) for r in built)} "
        f"families wrong on at least one path, "
        f"{sum(any('error' in r['raw'][p] for p in PATHS) for r in built)} ending in an error on at least one.",
    ]
    return "\n".join(lines)


def families() -> str:
    if not RAW.exists():
        return ""
    raw = read_json(RAW)
    bound = raw["exact_bound"]
    out = []
    for r in raw["rows"]:
        if not r["built"]:
            out.append([f"`{r['family']}`", "-", "not built: " + r["reason"].replace("|", "/"), "", "", "", "", "",
                        ""])
            continue
        out.append([f"`{r['family']}`", r["kind"], *(_delta(r["raw"][p], bound) for p in PATHS),
                    *(_kept(r["checked"][p], bound) for p in PATHS), _generation(r["generation"])])
    return table(["family", "kind", "CPU budget, check off", "CUDA budget, check off", "unpacked, check off",
                  "CPU budget: path kept, \\|delta\\|", "CUDA budget: path kept", "unpacked: path kept",
                  "greedy generation"], out)


def fused() -> str:
    """The fused body on the tree families (results/tests/fused_sweep.json, scripts/fused_table.py)."""
    if not FUSED.exists():
        return "No raw file yet: run `python scripts/fused_table.py`."
    raw = read_json(FUSED)
    built = [r for r in raw["rows"] if r["built"]]
    done = [r for r in built if "error" not in r]
    compiled = [r for r in done if r["fused"] and r["tree_calls"]]
    idle = sorted(r["family"] for r in done if not r["tree_calls"])
    failed = sorted(r["family"] for r in built if "error" in r or not r["fused"])
    worst = max((max(r["letters"], r["options"]) for r in done), default=float("nan"))
    seconds = sorted(r["compile_seconds"] for r in compiled if r["graphs"])
    return "\n".join([
        f"Measured on {raw['date']} at commit {(raw['commit']['sha'] or 'unknown')[:7]}"
        f"{' + uncommitted changes' if raw['commit']['dirty'] else ''} with transformers {raw['transformers']} and "
        f"torch {raw['torch']} on {raw['cpu']['model']} ({raw['cpu']['capability']} kernels), {raw['threads']} "
        f"thread{'s' if raw['threads'] != 1 else ''} (`{rel(FUSED)}`), the self-check off:",
        f"- {raw['exact']} of {len(built)} families the sweep keeps on tree attention score within "
        f"{raw['exact_bound']:g} of the plain forward with `fused: true` (max \\|delta\\| {worst:.1e}); "
        f"{len(compiled)} through compiled layers, {len(idle)} make no tree call, so nothing is compiled for them"
        + (f" ({', '.join(f'`{f}`' for f in idle)})" if idle else "")
        + (f"; not fused (an error or a fallback): {', '.join(f'`{f}`' for f in failed)}" if failed else "") + ";",
        f"- compile time of a family whose layer class was new to the process (the sweep's small models): median "
        f"{seconds[len(seconds) // 2]:.1f} s, at most {seconds[-1]:.1f} s ({len(seconds)} families)."
        if seconds else "- no family compiled a new layer class."])


def blocks() -> dict[str, str]:
    return {"support-summary": summary(), "support-table": families(), "fused-summary": fused()}
