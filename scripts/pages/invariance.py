"""docs/invariance.md's table: how far a record's scores move with each execution choice, from the raw files of
benchmarks/invariance.py (results/benchmarks/invariance_*.json) and of the server-history probe
(results/benchmarks/server_history_*.json, benchmarks/server_history.py). The cause of each row is written here,
once, from what was found (docs/invariance.md explains it); every number comes from the raw files."""
from __future__ import annotations

from pages.blocks import REPO, read_json, rel, table

RESULTS = REPO / "results" / "benchmarks"
CAUSES = {
    "torch threads": "not ours: torch's CPU kernels may split a sum over the threads (below)",
    "process state left by other work": "none: the engine pins its threads and IEEE fp32 products for each call",
    "items-per-call budget": "ours, not made exact: other items' prefixes and rows share the forward call (below)",
    "rows per forward call (batch size)": "ours, exact while a row's padded width stays the same (below)",
    "resume after SIGKILL mid-run": "none: the resumed items are computed as in the uninterrupted run",
    "Ray worker (default resources) vs in-process": "none: the worker computes with the in-process run's threads",
    "Ray worker of 1 CPU vs in-process": "the thread count (the threads row): Ray gives a worker one thread per CPU",
    "llama.cpp server: warm vs fresh": "not ours: llama.cpp (below)",
}


def _delta(x: float | None) -> str:
    return "not compared" if x is None else ("0" if x == 0 else f"{x:.2g}")


def rows_of(path) -> list[list[str]]:
    raw = read_json(path)
    out = []
    for r in raw["rows"]:
        same = "n/a" if r["same_choice"] is None else f"{r['same_choice']:.1%}"
        rule = "yes" if r["equal_by_rule"] else "no"
        if r.get("ignored"):
            rule += f" ({', '.join(r['ignored'])} aside)"
        w = raw.get("workload", {})
        variant = r["variant"]
        if "items" in w:
            workload = f"{w['name']}, {w['items']} items x {w['shuffles']} shuffles, {w['shots']} shots"
        else:  # the server probe names each row's workload after the variant's last "; "
            variant, _, workload = variant.rpartition("; ") if "; " in variant else (variant, "", "see the raw file")
        out.append([r["choice"], workload, r["scoring"], f"{r['baseline']} -> {variant}", str(r["records"]),
                    _delta(r["max_abs_delta"]), same, rule, CAUSES.get(r["choice"], "not analysed"), _cpu(raw),
                    _measured_on(raw, r["scoring"]), f"`{rel(path)}`"])
    return out


def _cpu(raw: dict) -> str:
    """The CPU a file was measured on and the kernels torch used, with what the environment forced; or that the file
    does not say."""
    cpu = raw.get("cpu") or (raw.get("machine") or {}).get("cpu")
    if not cpu:
        return "not recorded"
    forced = ", ".join(f"{k}={v}" for k, v in sorted(cpu.get("forced", {}).items()))
    return f"{cpu.get('model')}; {cpu.get('capability')} kernels" + (f" (forced: {forced})" if forced else "")


def _measured_on(raw: dict, scoring: str) -> str:
    """The commit the file was measured at and the baseline's engine path, or that the file does not say."""
    commit = (raw.get("machine") or {}).get("commit") or {}
    sha = commit.get("sha")
    at = "commit not recorded" if not sha else sha[:7] + (" + uncommitted changes" if commit.get("dirty") else "")
    engine = (raw.get("baseline_engine") or {}).get(scoring)
    if not engine:
        return f"{at}; engine path not recorded"
    return (f"{at}; {engine['attention']} attention, {engine['linear']} linear, {engine['items_per_call']} item(s) "
            f"per call, {engine['max_batch_tokens']:,} slots, {engine['max_batch_rows']} rows")


def invariance() -> str:
    rows = []
    for pattern in ("invariance_*.json", "server_history_*.json"):
        for path in sorted(RESULTS.glob(pattern)):
            rows += rows_of(path)
    if not rows:
        return "No raw file yet: run `benchmarks/invariance.py --json results/benchmarks/invariance_DATE.json`."
    return table(["execution choice", "workload", "scoring", "baseline -> variant", "records", "max \\|delta\\|",
                  "same choice", "equal by the 1e-6 rule", "cause", "CPU", "measured at; baseline engine", "raw file"],
                 rows, "llllrrrlllll")


def blocks() -> dict[str, str]:
    return {"invariance-table": invariance()}


def server_history() -> str:
    """docs/backends.md's table of the server-history rows (results/benchmarks/server_history_*.json)."""
    rows = []
    for path in sorted(RESULTS.glob("server_history_*.json")):
        raw = read_json(path)
        for r in raw["rows"]:
            d = r["detail"]
            rows.append([r["variant"], str(r["records"]), _delta(r["max_abs_delta"]), f"{r['same_choice']:.1%}",
                         f"{d['exact_requests']} of {r['records']}", f"`{rel(path)}`"])
    if not rows:
        return "No raw file yet: run `benchmarks/server_history.py --json results/benchmarks/server_history_DATE.json`."
    return table(["history (against a fresh server per request)", "requests", "max \\|delta\\| of a letter",
                  "same best letter", "requests with every letter equal (1e-6)", "raw file"], rows, "lrrrrl")


def server_conditions() -> str:
    """The in-process llama.cpp settings of server_history's `conditions`: which of them the effect depends on."""
    rows = []
    for path in sorted(RESULTS.glob("server_history_*.json")):
        for c in read_json(path).get("conditions", []):
            if "error" in c:
                rows.append([c["error"], "", "", f"`{rel(path)}`"])
                continue
            moved = c["records"] - c["detail"]["exact_requests"]
            rows.append([c["setting"], _delta(c["max_abs_delta"]), f"{moved} of {c['records']}", f"`{rel(path)}`"])
    return table(["llama.cpp setting (in-process, the short questions, run order against cold)",
                  "max \\|delta\\| of a letter", "requests that moved", "raw file"], rows, "lrrl") if rows else ""


def backends_blocks() -> dict[str, str]:
    return {"backends-server-history": server_history(), "backends-server-conditions": server_conditions()}
