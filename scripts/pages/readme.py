"""The README's headline numbers, from the same raw files as the docs: the engine's speed-ups (vs_lm_eval files,
results/benchmarks/*/speed_*.json: ratios on the same items), the ENEM agreement with INEP (in-sample from
mcqa_toolkit/enem/reproducibility.csv, held out from results/studies/enem_crossval.json, both on the same
candidates), and how long `make demo` takes from a fresh clone (benchmarks/make_demo.py's newest raw file)."""
from __future__ import annotations

from pathlib import Path

from pages.blocks import REPO, minutes, read_json, rel
from pages.enem import crossval_rows, totals
from pages.performance_engine import round5

RESULTS = REPO / "results" / "benchmarks"


def _span(ratios: list[float]) -> str:
    """A speed-up range over the files ("6-37x"), or the one ratio ("34.5x")."""
    lo, hi = min(ratios), max(ratios)
    return f"{lo:.1f}x" if len(ratios) == 1 else f"{lo:.0f}-{hi:.0f}x"


def engine() -> str:
    """One clause per device kind with vs_lm_eval raw files: the range of our speed-up over lm-eval (same items).
    GPU files of round 5 (the H200's, docs/performance.md) are left out until the README's owner takes them in."""
    by_device: dict[str, list[float]] = {}
    shapes: dict[str, set[str]] = {}
    dtypes: dict[str, set[str]] = {}
    for path in sorted(RESULTS.glob("*/speed_*.json")):
        raw = read_json(path)
        if raw["args"]["device"] == "cuda" and round5(raw):
            continue
        kind = raw["device"]["device"] if raw["args"]["device"] == "cuda" else "CPU"
        for r in raw["results"].values():
            by_device.setdefault(kind, []).append(r["speedup_lm"])
        shapes.setdefault(kind, set()).add(raw["args"].get("random_shape") or raw["args"]["model"])
        dtypes.setdefault(kind, set()).add(raw["args"]["dtype"])
    parts = [f"{_span(v)} lm-evaluation-harness on real-length ENEM prompts on {'a' if name == 'CPU' else 'an'} "
             f"{name} ({', '.join(sorted(shapes[name]))}, {', '.join(sorted(dtypes[name]))}; `docs/performance.md`)"
             for name, v in by_device.items()]
    return ("; ".join(parts) if parts else "its speed against lm-evaluation-harness: `docs/performance.md`") + "."


def enem() -> str:
    """The agreement with INEP's official scores on the development candidates, every figure on its basis."""
    import pandas as pd

    t = totals(crossval_rows())
    every, outside = t["all"], t["outside 187-190"]
    table = pd.read_csv(REPO / "mcqa_toolkit" / "enem" / "reproducibility.csv", dtype={"booklet": str},
                        keep_default_na=False)
    areas = table[table["booklet"] == "all"]
    n, now, before = int(areas["n_cases"].sum()), int(areas["n_exact"].sum()), int(areas["n_exact_as_published"].sum())
    if n != every["cases"]:
        raise ValueError(f"the reproducibility table has {n} candidates, the cross-validation {every['cases']}")
    return (f"On {n:,} real candidates of {areas['year'].nunique()} years, {now / n:.1%} of our scores equal INEP's to "
            f"0.1 with the shipped errata ({before / n:.1%} with the item files as published; in-sample: the errata "
            f"were found on those candidates); held out by 2-fold cross-validation, {every['exact_held_out'] / n:.1%} "
            f"of the same {n:,} ({outside['exact_held_out'] / outside['cases']:.1%} of the {outside['cases']:,} "
            "outside 2013's adapted two-set booklets).")


def demo_file() -> Path:
    """benchmarks/make_demo.py's newest raw file (by its date and time)."""
    raws = {path: read_json(path) for path in RESULTS.glob("make_demo_*.json")}
    return max(raws, key=lambda p: (raws[p]["date"], raws[p].get("time", "")))


def demo() -> str:
    """The newest fresh-clone `make demo` measurement: total, install, the demo's phases, the machine and commit."""
    path = demo_file()
    raw = read_json(path)
    d, machine = raw["demo"], raw["machine"]
    first = d["runs"][0]["seconds"] if d["runs"] else 0
    outcome = "exit status 0" if raw["demo_exit"] == 0 else f"exit status {raw['demo_exit']} (it failed)"
    return (f"From a fresh clone on a {machine['cpus']}-core machine without a GPU, `make demo` took "
            f"{minutes(raw['total_seconds'])} in all, {outcome}: {raw['install_seconds']:.0f} s to install (no pip "
            f"cache: every package fetched) and {raw['demo_seconds']:.0f} s of demo, of which {len(d['runs'])} runs "
            f"took {d['runs_seconds']} s (the first {first} s, with the model's first load and dequantisation) and "
            f"the report's {len(d['report_notebooks'])} notebooks {d['report_seconds']} s (commit "
            f"{raw['commit'][:7]}, {raw['date']}, 1-minute load {machine['load_1min_before']} before; `{rel(path)}`).")


def support() -> str:
    """What the equality claim covers: the support sweep's families (results/tests/support_sweep.json)."""
    path = REPO / "results" / "tests" / "support_sweep.json"
    if not path.exists():
        return "Which model families it scores exactly: `docs/support.md`."
    raw = read_json(path)
    built = [r for r in raw["rows"] if r["built"]]
    exact = sum(r["verdict"] == "exact" for r in built)
    return (f"The engine checks itself on every model it is given and steps aside where its path is not exact: of "
            f"the {raw['families']} causal-LM model types of transformers {raw['transformers']}, {len(built)} build "
            f"at a small size and {exact} of them score within {raw['exact_bound']:g} of the plain forward on every "
            f"engine path, with the same greedy tokens (`docs/support.md`).")


def blocks() -> dict[str, str]:
    return {"readme-engine": engine(), "readme-enem": enem(), "readme-demo": demo(), "readme-support": support()}
