"""docs/performance.md's tables, from the raw files under results/benchmarks/ (every row names its file).

Raw files read (the fields each table uses are listed in its function):
- `*/speed_*.json` with a CUDA device: benchmarks/vs_lm_eval.py --json (args, device, results.{letters,options});
- `*/eq_*.json`: benchmarks/gpu_equality.py --json (rows);
- `engine_calls_*/engine_*.json`: benchmarks/scoring_throughput.py --json; `before_one_item_per_call.txt`: that
  script's printed lines (the old engine wrote no JSON); `profile_*.txt`: benchmarks/profile_scoring.py's lines;
- `vs_vllm_*.json`: benchmarks/vs_vllm.py --json; `ray_scaling_*.json`, `ray_overhead_*.json`.
MFU is recomputed here against the device's datasheet peak (PEAK_TFLOPS, keyed by the device name the raw file
records), from the matrix-product FLOPs of the model shape the file names (benchmarks/_shapes.py): 2 x body
weights per unique token + 2 x LM-head weights per scored position, over the run's seconds. The raw files of
2026-11-24 computed the same FLOPs against 790 TFLOP/s; tests/test_render_docs.py checks that these FLOPs are
theirs.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pages import performance_engine, performance_gpu, performance_host, performance_rows
from pages.blocks import REPO, date_of, minutes, module_at, notes_under, number, read_json, rel, table

RESULTS = REPO / "results" / "benchmarks"
# dense BF16 tensor-core peak (no sparsity) from each device's datasheet, keyed by the name torch reports
PEAK_TFLOPS: dict[str, tuple[float, str]] = {
    "NVIDIA H100 80GB HBM3": (989.0, "H100 SXM5 datasheet, dense BF16"),
}
VOCAB = 262_144  # the embedded Gemma tokenizer's, which every random shape was built with


def shape_weights(shape: str) -> tuple[int, int]:
    """(body matrix weights, LM-head weights) of a published shape (embeddings, norms and biases left out, as
    the raw files of 2026-11-24 counted them, with the former benchmarks/_limit.model_flops)."""
    c = module_at(REPO / "benchmarks" / "_shapes.py").SHAPES[shape]
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    attention = 2 * c["hidden_size"] * head_dim * (c["num_attention_heads"] + c["num_key_value_heads"])
    layer = attention + 3 * c["hidden_size"] * c["intermediate_size"]
    return layer * c["num_hidden_layers"], VOCAB * c["hidden_size"]


def flops(shape: str, stats: dict[str, Any]) -> float:
    body, head = shape_weights(shape)
    return 2.0 * body * stats["unique"] + 2.0 * head * stats["scored_positions"]


def mfu(raw: dict[str, Any], scoring: str) -> tuple[float | None, str]:
    """(MFU against the datasheet peak, the peak's source) of one scoring of a vs_lm_eval GPU file."""
    name = raw["device"]["device"]
    if name not in PEAK_TFLOPS:
        return None, f"no datasheet peak for {name!r}"
    peak, source = PEAK_TFLOPS[name]
    r = raw["results"][scoring]
    return flops(raw["args"]["random_shape"], r["stats"]) / r["t_ours"] / (peak * 1e12), f"{peak:g} TFLOP/s, {source}"


def engine_speed() -> str:
    """vs_lm_eval's GPU files without the references of benchmarks/_reference.py (round 3; the others:
    performance_engine.vs_lm_eval): s/item of lm-eval, the naive path and ours on the same items, the
    ratios, unique tokens per second, the ratio to the body's own forward rate (full-length rows / 256-token
    rows), MFU (GPUs with a datasheet peak)."""
    rows, peaks = [], set()
    for path in sorted(RESULTS.glob("*/speed_*.json")) + sorted(RESULTS.glob("vs_lm_eval_*.json")):
        raw = read_json(path)
        if raw["args"]["device"] != "cuda" or performance_engine.round5(raw):  # round 5: performance_engine.vs_lm_eval
            continue
        for scoring in ("letters", "options"):
            r = raw["results"].get(scoring)
            if r is None:
                continue
            value, peak = mfu(raw, scoring)
            peaks.add(peak)
            rows.append([date_of(path), raw["device"]["device"], raw["args"]["random_shape"] or raw["args"]["model"],
                         scoring,
                         f"{r['s_lm']:.2f} / {r['s_naive']:.2f} / {r['s_ours']:.2f}", f"{r['speedup_lm']:.1f}x",
                         f"{r['speedup_naive']:.1f}x", f"{r['unique_tok_s']:,.0f}",
                         f"{r['frac']:.2f} / {r['frac_short']:.2f}", "n/a" if value is None else f"{value:.3f}",
                         f"`{rel(path)}`"])
    if not rows:
        return "No raw file on cuda yet (`benchmarks/vs_lm_eval.py --device cuda --json ...`)."
    body = table(["date", "device", "model", "scoring", "s/item lm-eval / naive / ours", "vs lm-eval", "vs naive",
                  "unique tok/s", "ours / body forward rate (full rows / 256-token rows)", "MFU", "raw file"], rows,
                 "llllrrrrrrl")
    peaks.discard("")
    return body + ("\n\nMFU against " + "; ".join(sorted(peaks)) + " (recomputed from the shapes' FLOPs)."
                   if peaks else "")


def gpu_tokens() -> str:
    """Tokens forwarded / unique per scoring, over the round-3 GPU files (same tokenizer: the same for every
    shape)."""
    seen: dict[str, set[tuple[int, int]]] = {}
    for path in sorted(RESULTS.glob("*/speed_*.json")):
        raw = read_json(path)
        if raw["args"]["device"] == "cuda" and not performance_engine.round5(raw):
            for scoring, r in raw["results"].items():
                seen.setdefault(scoring, set()).add((r["stats"]["forwarded"], r["stats"]["unique"]))
    parts = [f"{scoring}: " + ", ".join(f"{f:,} forwarded for {u:,} unique ({f / u:.3f})" for f, u in sorted(v))
             for scoring, v in seen.items()]
    return "Tokens per scoring on those items (`stats` in the files): " + "; ".join(parts) + "."


def gpu_equality() -> str:
    """gpu_equality: per shape x dtype, maxima over attention, layout and scoring."""
    rows = []
    for path in sorted(RESULTS.glob("*/eq_*.json")):
        raw = read_json(path)
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in raw["rows"]:
            groups.setdefault((r["shape"], r["dtype"]), []).append(r)
        for (shape, dtype), g in sorted(groups.items()):
            rows.append([shape, dtype, f"{max(r['engine_vs_naive'] for r in g):.2g}",
                         f"{max(r['naive_noise'] for r in g):.2g}", f"{max(r['engine_err'] for r in g):.3g}",
                         f"{max(r['naive_err'] for r in g):.3g}",
                         f"{sum(r['same_choices'] for r in g)}/{sum(r['compared'] for r in g)}", f"`{rel(path)}`"])
    return table(["shape", "dtype", "max \\|ours - naive\\|", "naive layout noise", "ours vs fp32", "naive vs fp32",
                  "same choices (margin > layout noise)", "raw file"], rows, "llrrrrrl")


def _text_rows(path: Path) -> dict[str, dict[str, float]]:
    """scoring_throughput's printed lines: calls, tokens and seconds per scoring."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\[(\w+)\] .*forwarded=(\d+) unique=(\d+) .*calls=(\d+) .*\| ours ([\d.]+)s", line)
        if m:
            out[m.group(1)] = {"tokens_forwarded": int(m.group(2)), "tokens_unique": int(m.group(3)),
                               "calls": int(m.group(4)), "ours_s": float(m.group(5)), "max_delta": None, "items": 9}
    return out


def engine_calls() -> str:
    """scoring_throughput per budget: forward calls per item, tokens, seconds, agreement with the naive path."""
    rows = []
    for folder in sorted(RESULTS.glob("engine_calls_*")):
        sources: list[tuple[str, Path, dict[str, Any]]] = []
        before = folder / "before_one_item_per_call.txt"
        if before.exists():
            sources.append(("before (one item per call, 8,192 / 64 on every device)", before, _text_rows(before)))
        for path in sorted(folder.glob("engine_*.json")):
            raw = read_json(path)
            budget = raw["args"].get("budget")
            sources.append((f"{budget.upper() if budget else 'default'} budget, on this CPU", path, raw["results"]))
        for label, path, results in sources:
            for scoring, r in results.items():
                delta = r.get("max_delta")
                agree = "not compared" if delta is None else f"{delta:.2g}"
                rows.append([label, scoring, f"{r['calls']} ({r['calls'] / r['items']:.2f})",
                             f"{r['tokens_forwarded']:,} / {r['tokens_unique']:,}", f"{r['ours_s']:.1f}", agree,
                             f"`{rel(path)}`"])
    return table(["engine", "scoring", "forward calls (per item)", "tokens forwarded / unique",
                  "seconds (9 items)", "max \\|delta\\| vs naive", "raw file"], rows, "llrrrrl")


def profile_lines() -> str:
    """profile_scoring's kernel-launch counts and predicted host time per item, per profile file."""
    lines = []
    files = sorted(RESULTS.glob("engine_calls_*/profile_*.txt")) + sorted(RESULTS.glob("engine3_*/profile_*.txt"))
    for path in files:
        p = performance_engine.parse_profile(path)
        if p:
            lines.append(f"- `{rel(path)}` ({p['scoring']}, {p['items_per_call']} item(s) per call): "
                         f"{p['ops_per_item']} kernel-launching operators per item ({p['ops_per_call']} per forward "
                         f"call), host phases {p['host']:.0f} ms/item (tokenisation {p['tok']:.0f} ms), predicted "
                         f"host time on a GPU at {p['launch_us']} us per launch: {p['predicted']} ms/item")
    return "\n".join(lines)


def _vllm_rows(path: Path, raw: dict[str, Any], labels: dict[str, str]) -> list[list[str]]:
    """vs_vllm files with sides interleaved over rounds (`runs`, per-scoring `rounds` and medians)."""
    vllm = raw["vllm"]
    mode = ("torch.compile on" if vllm.get("compile") and not vllm.get("compile_error") else
            f"eager ({vllm.get('compile_error') or 'enforce_eager'})")
    rows = []
    side = f" ({raw['device']['dtype']}{'; ours fused' if raw['ours'].get('fused') else ''})"
    for key, r in raw["results"].items():
        rounds = r["rounds"]
        usage = next(x["usage"] for x in raw["runs"] if x["side"] == "vllm" and x["scoring"] == key)
        ours = next(x["usage"] for x in raw["runs"] if x["side"] == "ours" and x["scoring"] == key)
        computed = usage["prompt_tokens"] - usage["cached_tokens"]
        speedups = " / ".join(f"{x['speedup']:.2f}" for x in rounds)
        rows.append([date_of(path), labels.get(key, key) + side, f"{rounds[0]['records']}",
                     f"{r['median_seconds_ours']:.1f} s", f"{r['median_seconds_vllm']:.1f} s",
                     f"{r['median_speedup']:.2f}x (rounds {speedups})", f"{mode}, {len(rounds)} interleaved rounds",
                     f"{computed:,} ({usage['prompt_tokens']:,} - {usage['cached_tokens']:,}); ours {ours['unique']:,}"
                     f"; per second: vLLM {computed / r['median_seconds_vllm']:,.0f}, ours "
                     f"{ours['unique'] / r['median_seconds_ours']:,.0f}",
                     _same_each_round(rounds), f"{max(x['max_delta'] for x in rounds):.3g}", f"`{rel(path)}`"])
    return rows


def _same_each_round(rounds: list[dict[str, Any]]) -> str:
    """Same choices over the distinct records, each round scoring the same records again."""
    counts = {(x["same_choices"], x["records"]) for x in rounds}
    if len(counts) == 1:
        same, records = counts.pop()
        return f"{same}/{records} in each of {len(rounds)} rounds"
    return " / ".join(f"{x['same_choices']}/{x['records']}" for x in rounds) + " (per round)"


def logprob_bound() -> float:
    """The bound the vLLM tests hold ours and vLLM to (|delta| of a log-prob between two fp32 implementations on
    the same weights), read from the tests so that the page and the tests cannot part."""
    text = (REPO / "tests" / "backends" / "test_vllm_server.py").read_text()
    return float(re.search(r"^LOGPROB_TOL = ([0-9.e-]+)", text, re.M).group(1))


def vs_vllm() -> str:
    """vs_vllm: ours and vLLM on the same items through run(), with vLLM's tokens computed and the agreement."""
    rows = []
    labels = {"letters": "letters", "options_nocache": "options, vLLM skipping its prefix cache",
              "options_cache": "options, vLLM reading its prefix cache"}
    files = []
    for path in sorted(RESULTS.glob("vs_vllm_*.json")) + sorted(RESULTS.glob("*/vs_vllm*.json")):
        raw = read_json(path)
        files.append((path, raw))
        if "runs" in raw:
            rows += _vllm_rows(path, raw, labels)
            continue
        engine = raw["vllm"]["provenance"]["engine"]
        compiled = "eager (torch.compile off)" if engine.get("enforce_eager") else "torch.compile on"
        for key, r in raw["results"].items():
            u = r["vllm_usage"]
            computed = u["prompt_tokens"] - u["cached_tokens"]
            rows.append([date_of(path), labels.get(key, key), f"{r['records']}", f"{r['seconds_ours']:.1f} s",
                         f"{r['seconds_vllm']:.1f} s", f"{r['speedup']:.2f}x", compiled,
                         f"{computed:,} ({u['prompt_tokens']:,} - {u['cached_tokens']:,})",
                         f"{r['same_choices']}/{r['records']}", f"{r['max_delta']:.3g}", f"`{rel(path)}`"])
    return table(["date", "scoring", "records", "ours", "vLLM", "ours vs vLLM", "vLLM mode",
                  "tokens computed: vLLM (prompt - cached); ours (unique)", "same choices",
                  f"max \\|delta\\| of a score (the vLLM tests' bound: {logprob_bound():g})", "raw file"],
                 rows, "llrrrrlrrrl") + notes_under(files)


def ray() -> str:
    """ray_scaling (seconds and efficiency per pool size, in-process beside) and ray_overhead (medians)."""
    rows = []
    for path in sorted(RESULTS.glob("ray_scaling_*.json")):
        raw = read_json(path)
        sizes = sorted(raw["seconds"], key=int)
        seconds = " / ".join(f"{raw['seconds'][n]:.2f}" for n in sizes)
        eff = " / ".join(f"{raw['efficiency'][n]:.2f}" for n in sizes)
        inproc = raw.get("seconds_inprocess")
        rows.append([raw["date"], "scaling: latency-bound run, " f"{raw['items']} items x {raw['shuffles']} shuffles, "
                     f"{raw['delay_s'] * 1000:g} ms per call", f"{' / '.join(sizes)} workers: {seconds} s, efficiency "
                     f"{eff}; without Ray {number(inproc)} s", f"{raw['load_1min']['before']:.1f} / "
                     f"{raw['load_1min']['after']:.1f}", f"`{rel(path)}`"])
    for path in sorted(RESULTS.glob("ray_overhead_*.json")):
        raw = read_json(path)
        med = raw["median_seconds"]
        rows.append([raw["date"], f"overhead: embedded model, {raw['records']} records, one worker of "
                     f"{raw['threads']} CPUs, {raw['repeats']} interleaved repeats",
                     f"median {med['inprocess']:.2f} s in-process, {med['pool']:.2f} s through the pool "
                     f"({raw['overhead']:+.1%}); one-time: cluster start {raw['connect_s']:.1f} s, worker start and "
                     f"model load {raw['worker_start_and_load_s']:.1f} s", f"{raw['load_1min']['before']:.1f} / "
                     f"{raw['load_1min']['after']:.1f}", f"`{rel(path)}`"])
    return table(["date", "benchmark", "result", "1-min load before / after", "raw file"], rows)


def demo() -> str:
    """`make demo` from a fresh clone, install included (results/benchmarks/make_demo_*.json,
    benchmarks/make_demo.py)."""
    rows = []
    for path in sorted(RESULTS.glob("make_demo_*.json")):
        r = read_json(path)
        d, m = r["demo"], r["machine"]
        first = d["runs"][0]["seconds"] if d["runs"] else 0
        rows.append([r["date"], r["commit"][:7], minutes(r["total_seconds"]), minutes(r["install_seconds"]),
                     minutes(r["demo_seconds"]), f"{len(d['runs'])} runs {d['runs_seconds']} s (the first {first} s, "
                     f"with the model's first load), {len(d['report_notebooks'])} notebooks {d['report_seconds']} s",
                     r["demo_exit"], f"{m['load_1min_before']:.2f} / {m['load_1min_after']:.2f}",
                     "yes" if r["demo_exit"] == 0 and r["total_seconds"] <= r["goal_seconds"]
                     else f"no (goal {minutes(r['goal_seconds'])})", f"`{rel(path)}`"])
    return table(["date", "commit", "in all", "install", "demo", "of the demo", "exit", "1-min load before / after",
                  "goal met", "raw file"], rows, "llrrrlrrll") if rows else "No raw file yet."


def blocks() -> dict[str, str]:
    return {"perf-engine-cpu": performance_engine.vs_lm_eval("cpu"),
            "perf-engine-defaults": performance_engine.defaults(),
            "perf-body-kernels": performance_engine.body_kernels(), "perf-fused-body": performance_engine.fused_body(),
            "perf-exam-runs": performance_engine.exam_runs(), "perf-row-groups": performance_rows.row_groups(),
            "perf-rows-before-after": performance_rows.rows_before_after(),
            "perf-engine-calls": engine_calls(),
            "perf-profile": "\n\n".join(x for x in (profile_lines(), performance_host.host_before_after()) if x),
            "perf-vs-vllm": vs_vllm(), "perf-gpu-speed": engine_speed() + "\n\n" + gpu_tokens(),
            "perf-gpu-equality": gpu_equality(),
            "perf-ray": ray(), "perf-demo": demo(), **performance_gpu.blocks(), **performance_host.blocks()}

