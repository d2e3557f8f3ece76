"""docs/performance.md's tables of the engine's current defaults (engine III and after), from raw files under
results/benchmarks/ (every row names its file):
- `*/throughput_*.json`: benchmarks/scoring_throughput.py --json with the references of benchmarks/_reference.py
  (body_seconds, body_short_rows, body_full_rows, useful_gflops, gemm);
- `*/body_kernels*.json`: benchmarks/body_kernels.py --json (variants x shapes);
- `*/fused_body*.json`: benchmarks/fused_body.py --json (the eager and the fused engine, per dtype and scoring).
- `*/speed_*.json` with those references, on any device: benchmarks/vs_lm_eval.py --json (lm-eval, the naive
  path and ours on the same items; on enem-long or a whole exam, the `workload` column).
The engine's own rate is given two ways: all in (unique tokens over the scoring's seconds, LM head included) and its
model body alone (unique tokens over `body_seconds`), each against the body's rate on 256-token rows measured in the
same run; only the second compares like with like (the references run no LM head). A file written before the
references computed with the engine's linear kernel has no `linear` in them: they used PyTorch's ("torch").
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pages.blocks import REPO, date_of, notes_under, read_json, rel, table

RESULTS = REPO / "results" / "benchmarks"


def _int(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def _ratio(x: float | None, ref: float | None) -> str:
    return "n/a" if x is None or not ref else f"{x / ref:.2f}"


def _spread(x: float | None, ref: dict[str, float]) -> str:
    """x against the run's own reference: against its best repeat, then the range over its repeats."""
    if x is None or not ref.get("best"):
        return "n/a"
    return f"{x / ref['best']:.2f} ({x / ref['max']:.2f}-{x / ref['min']:.2f})"


def _vs_naive(r: dict[str, Any]) -> str:
    """The naive path against ours on the same items where the file has it; else said to be other items."""
    if r.get("speedup") is None:
        return "not compared"
    agreement = f"max \\|delta\\| {r['max_delta']:.2g}, same choices: {'yes' if r['same_choices'] else 'no'}"
    n = r["naive_items"]
    if r.get("speedup_same_items") is not None:
        return (f"{r['speedup_same_items']:.1f}x on the naive path's {n} item(s), warm-up included "
                f"({r['speedup']:.1f}x against ours over all {r['items']}), {agreement}")
    return (f"{r['speedup']:.1f}x: the naive path on {n} item(s) against ours over {r['items']} (not the same "
            f"items), {agreement}")


def round5(raw: dict[str, Any]) -> bool:
    """Whether a vs_lm_eval file carries the references of benchmarks/_reference.py (not the round-3 `frac`)."""
    return all("vs_body_full_rows" in r for r in raw["results"].values())


def mfu_cell(r: dict[str, Any]) -> str:
    return "n/a" if r.get("mfu") is None else f"{r['mfu']:.3f}"


def workload(args: dict[str, Any]) -> str:
    """The benchmark's workload as its arguments name it: enem-long, or the exam's loader and files."""
    if args.get("workload") != "exam":
        return args.get("workload") or "enem-long"
    files = [Path(p).stem for p in args.get("data_path") or []]
    named = files[0] + (f" and {len(files) - 1} more" if len(files) > 1 else "") if files else "its default file"
    return f"{args['dataset']}: {named}"


def vs_lm_eval(device: str) -> str:
    """vs_lm_eval files with the round-5 references on `device`: s/item of lm-eval / naive / ours (the ratios on
    the items both sides scored), unique tok/s, the ratio to the body's forward rate (full-length rows / 256-token
    rows, best repeat), and MFU on a GPU / useful GFLOP/s against oneDNN's GEMM on a CPU."""
    rows, peaks, files = [], set(), []
    for path in sorted(RESULTS.glob("*/speed_*.json")):
        raw = read_json(path)
        if raw["args"]["device"] != device or not round5(raw):
            continue
        files.append((path, raw))
        for scoring, r in raw["results"].items():
            peaks.add(f"{r['peak_tflops']:g} TFLOP/s ({r['peak_source']})" if r.get("peak_tflops") else "")
            rate = (mfu_cell(r) if device == "cuda"
                    else f"{r['useful_gflops']:.0f} ({_ratio(r['useful_vs_onednn'], 1)})")
            rows.append([date_of(path), raw["device"]["device"], raw["args"]["random_shape"] or raw["args"]["model"],
                         workload(raw["args"]), scoring,
                         f"{r['n_items_lm']} / {r['n_items_naive']} / {round(r['t_ours'] / r['s_ours'])}",
                         f"{r['s_lm']:.2f} / {r['s_naive']:.2f} / {r['s_ours']:.2f}", f"{r['speedup_lm']:.1f}x",
                         f"{r['speedup_naive']:.1f}x", f"{r['same_lm']}/{r['n_lm']}", f"{r['unique_tok_s']:,.0f}",
                         f"{r['vs_body_full_rows']['vs_best']:.2f} / {r['vs_body_short_rows']['vs_best']:.2f}",
                         rate, f"`{rel(path)}`"])
    if not rows:
        return f"No raw file yet (`benchmarks/vs_lm_eval.py --device {device} --json ...`)."
    peaks.discard("")
    return table(["date", "device", "model", "workload", "scoring", "items lm-eval / naive / ours",
                  "s/item lm-eval / naive / ours", "vs lm-eval (same items)", "vs naive (same items)",
                  "same choices as lm-eval", "unique tok/s", "ours / body forward rate (full rows / 256-token rows)",
                  "MFU" if device == "cuda" else "useful GFLOP/s (of oneDNN GEMM)", "raw file"], rows,
                 "lllllrrrrrrrrl") + (
        "\n\nMFU against " + "; ".join(sorted(peaks)) + ", as the files computed it." if peaks else "") + (
        notes_under(files))


def defaults() -> str:
    """scoring_throughput files that carry the reference fields: speed all in and of the body alone, against the
    body's rates on 256-token and full-length rows, useful GFLOP/s against the GEMM rates, the naive path."""
    rows, files = [], []
    for path in sorted(RESULTS.glob("*/throughput_*.json")):
        raw = read_json(path)
        if raw["args"]["device"] != "cpu":  # a GPU's: performance_gpu.py
            continue
        files.append((path, raw))
        gemm = raw.get("gemm") or {}
        mm = (gemm.get("torch_mm_gflops") or {}).get("best")
        dnn = (gemm.get("onednn_gflops") or {}).get("best")
        for scoring, r in raw["results"].items():
            short, full = r["body_short_rows"]["tok_s"], r["body_full_rows"]["tok_s"]
            rows.append([date_of(path), workload(raw["args"]), scoring, f"{r['items']} x {raw['args']['shuffles']}",
                         f"{r['mean_len']:,.0f}",
                         f"{r['s_per_item_ours']:.2f}", f"{r['unique_tok_s']:,.0f} / {r['body_tok_s']:,.0f}",
                         f"{_spread(r['unique_tok_s'], short)} / {_spread(r['body_tok_s'], short)}",
                         f"{_spread(r['unique_tok_s'], full)} / {_spread(r['body_tok_s'], full)}",
                         f"{r['useful_gflops']:.0f} ({_ratio(r['useful_gflops'], mm)} / "
                         f"{_ratio(r['useful_gflops'], dnn)})", _vs_naive(r),
                         f"{r['attention']}, {r['linear']} ({r['body_short_rows'].get('linear', 'torch')})",
                         f"`{rel(path)}`"])
    if not rows:
        return "No raw file yet (`benchmarks/scoring_throughput.py --json ...`)."
    return table(["date", "workload", "scoring", "items x shuffles", "tokens per prompt", "s/item",
                  "tok/s: all in (unique) / in the body's calls (forwarded)",
                  "vs body on 256-token rows, all in / body: best (range over its repeats)",
                  "vs body on full-length rows, all in / body: best (range over its repeats)",
                  "useful GFLOP/s (of torch.mm / of oneDNN GEMM)",
                  "vs naive path", "attention, linear (the references' linear)", "raw file"], rows,
                 "lllrrrrrrrlll") + notes_under(files)


def _variant_row(name: str, v: dict[str, Any], shapes: list[str]) -> list[str]:
    if v.get("error"):
        return [name, *["failed" for _ in shapes], "n/a", "n/a", v["error"]]
    rates = [f"{_int(v[s]['tok_s_median'])} / {_int(v[s]['tok_s_best'])} "
             f"({_int(v[s]['useful_gflops_best'])} GFLOP/s)" for s in shapes]
    return [name, *rates, f"{v['max_diff_vs_eager']:.2g}", f"{v['warm_s']:.0f}", ""]


def _forced(raw: dict[str, Any]) -> str:
    """`, instruction set forced: K=V` where the benchmark's process had its ISA forced down, else nothing."""
    forced = ((raw.get("machine") or {}).get("cpu") or {}).get("forced") or {}
    return ", instruction set forced: " + ", ".join(f"{k}={v}" for k, v in forced.items()) if forced else ""


def body_kernels() -> str:
    """body_kernels: tokens/s (median / best) per variant and shape, the hidden states' largest difference from
    eager, warm-up seconds (compilation included), the reason where a variant could not run."""
    parts = []
    for path in sorted(RESULTS.glob("*/body_kernels*.json")):
        raw = read_json(path)
        variants = raw["variants"]
        shapes = [k for k in next(iter(variants.values())) if "x" in k and k[0].isdigit()]
        rows = [_variant_row(name, v, shapes) for name, v in variants.items()]
        gemm = raw["gemm"]
        dnn = (gemm.get("onednn_gflops") or {}).get("best")
        load = raw["load_1min"]
        parts.append(table(["variant", *[f"tok/s median / best, rows {s}" for s in shapes],
                            "max \\|hidden - eager\\|", "warm-up s", "could not run"], rows,
                           "l" + "r" * (len(shapes) + 2) + "l")
                     + f"\n\n{date_of(path)}, {raw['device']['device']}{_forced(raw)}, {raw['device']['dtype']}, "
                     f"{raw['device']['torch_threads']} torch "
                     f"threads, {raw['rounds']} interleaved rounds, 1-minute load {load['before']:.2f} -> "
                     f"{load['after']:.2f}; GEMM rate on this device: torch.mm {gemm['torch_mm_gflops']['best']:.0f} "
                     f"GFLOP/s, oneDNN {_int(dnn)} GFLOP/s. Raw file: `{rel(path)}`.")
    return "\n\n".join(parts) or "No raw file yet (`benchmarks/body_kernels.py --json ...`)."


def parse_profile(path: Path) -> dict[str, Any] | None:
    """profile_scoring's printed lines: the model and scoring, items and forward calls of the profiled block, items
    per call, wall seconds per item, seconds per item of each phase (`phases`, by its printed name), the
    kernel-launching operators (per forward call, per item), host phases and tokenisation ms per item, the
    per-launch cost and the predicted GPU host ms/item, and (files that print it) the machine's reference: the
    same items tokenised without the run's TokenCache (`reference_tok`, ms/item); None for a file without them."""
    text = path.read_text(encoding="utf-8")
    m = re.search(r"kernel-launching ops: (\d+) per forward call(?: \([^)]*\))?, (\d+) per item .*host phases "
                  r"(\d+) ms/item; predicted GPU host ms/item at (\d+) us/launch: (\d+)", text)
    calls = re.search(r"items_per_call=(\d+)", text)
    tok = re.search(r"tokenisation\s+([\d.]+) s/item", text)
    head = re.search(r"^\[(\w+)\] (\d+) item\(s\).*forward calls=(\d+) .*\| wall [\d.]+s \(([\d.]+) s/item", text, re.M)
    if not (m and calls and tok and head):
        return None
    model = re.search(r"^model=(\S+)", text, re.M)
    phases = {name.strip(): float(sec) for name, sec in
              re.findall(r"^\[\w+\]   (\S.*?)\s+(-?[\d.]+) s/item\s+-?[\d.]+%$", text, re.M)}
    ref = re.search(r"tokenisation without the run's TokenCache \(the machine's reference\): ([\d.]+) ms/item", text)
    return {"model": model.group(1) if model else "n/a", "scoring": head.group(1), "items": int(head.group(2)),
            "calls": int(head.group(3)), "wall": float(head.group(4)), "items_per_call": int(calls.group(1)),
            "ops_per_call": int(m.group(1)), "ops_per_item": int(m.group(2)), "host": float(m.group(3)),
            "launch_us": int(m.group(4)), "predicted": int(m.group(5)), "tok": 1000 * float(tok.group(1)),
            "phases": phases, "reference_tok": float(ref.group(1)) if ref else None}


def fused_body() -> str:
    """fused_body: per dtype and scoring, the eager and the fused engine's seconds per item, their ratio, the
    compile seconds of the fused warm-up, their largest |difference| and same choices; the start-up line."""
    parts = []
    for path in sorted(RESULTS.glob("*/fused_body*.json")):
        raw = read_json(path)
        rows, lines = [], []
        for dtype, entry in raw["dtypes"].items():
            for scoring in ("letters", "options"):
                if scoring not in entry:
                    continue
                r = entry[scoring]
                rows.append([dtype, scoring, f"{r['eager']['s_per_item']:.2f}", f"{r['fused']['s_per_item']:.2f}",
                             f"{r['fused_vs_eager']:.2f}x", f"{r['fused']['compile_s']:.1f} / "
                             f"{r['fused']['compile_s_timed']:.1f}",
                             f"{r['max_abs_delta']:.1e}", f"{100 * r['same_choice']:.1f}%"])
            if "startup" in entry:
                s = entry["startup"]
                lines.append(f"{dtype}: a process's first fused item on an empty inductor cache "
                             f"{s['first']['item_s']:.1f} s (compile {s['first']['compile_s']:.1f} s), on the cache "
                             f"it left {s['cached']['item_s']:.1f} s (compile {s['cached']['compile_s']:.1f} s)")
        w, cpu = raw["workload"], raw["cpu"]
        parts.append(table(["dtype", "scoring", "eager s/item", "fused s/item", "fused vs eager",
                            "compile s: warm-up / timed", "max \\|delta\\|", "same choice"], rows, "llrrrrrr")
                     + f"\n\n{date_of(path)}, {cpu['model']} ({cpu['capability']} kernels), {w['workload']}: "
                     f"{w['items']} items ({w['items'] - 1} timed, interleaved) x {w['shuffles']} shuffles, "
                     f"{w['shots']} shots. " + "; ".join(lines) + (". " if lines else "") + f"Raw file: `{rel(path)}`.")
    return "\n\n".join(parts) or "No raw file yet (`benchmarks/fused_body.py --json ...`)."


def exam_runs() -> str:
    """exam_runs: per params file of each sitting, `mcqa run`'s wall seconds, each run's scoring seconds, path and
    fused, and its agreement with the same run of the first file (same choice, largest |delta|)."""
    parts = []
    for path in sorted(RESULTS.glob("*/exam_runs*.json")):
        raw = read_json(path)
        first = Path(raw["params"][0]).stem
        rows = []
        for stem in raw["order"]:
            f = raw["files"][stem]
            for name, r in f["runs"].items():
                vs = (f.get("vs_first") or {}).get(name)
                rows.append([f"`{stem}`", f"{f['wall_seconds']:.1f}", name.rsplit("__", 1)[-1],
                             f"{r['scoring_seconds']:.1f}", f"{r['path']}, {'fused' if r['fused'] else 'eager'}",
                             "-" if vs is None else f"{100 * vs['same_choice']:.1f}% of {vs['records']:,}",
                             "-" if vs is None or vs["max_abs_delta"] is None else f"{vs['max_abs_delta']:.3g}"])
        cpu = raw["machine"]["cpu"]
        parts.append(table(["params file (in the order run)", "mcqa run s", "strategy", "scoring s", "engine",
                            f"same choice as `{first}`", "max \\|delta\\|"], rows, "lrlrlrr")
                     + f"\n\n{date_of(path)}, {cpu['model']} ({cpu['capability']} kernels, "
                     f"{', '.join(cpu['flags'])}), at {raw['machine']['commit']['sha'][:7]}"
                     f"{'+changes' if raw['machine']['commit']['dirty'] else ''}. Raw file: `{rel(path)}`.")
    return "\n\n".join(parts) or "No raw file yet (`benchmarks/exam_runs.py --json ...`)."
