"""Our engine against vLLM in-process (backends/vllm.py), on the same items through the project's own run(),
scoring time only (engine start and model load excluded on both sides).

The workload is the other benchmarks' (_workload.py): by default `enem-long`, real-length ENEM prompts (the ENEM
paper's fixed 4-shot block of real 2022 records plus our passages, the real 2022 natural-science items first), the
embedded Gemma-3-270M in fp32. Scorings (`--scorings letters|options|both`):
  letters  first_token over `--items` items x `--shuffles` shuffles: ours = the KV-prefix engine; vLLM = one
           generated token with `logprob_token_ids` (every shown letter's log-prob), prefix caching on;
  options  loglik (sum) over `--options-items` x `--options-shuffles`: vLLM = prompt log-probs, read from its
           prefix cache where the installed vLLM allows it (`--vllm-reuse on`), or skipping it as vLLM does by
           default for prompt log-probs (`off`, lm-eval's vLLM path: `prompt_logprobs` recomputing every prompt);
           `both` (default) runs the two, cache emptied before each.
Ours runs here (our engine's budget for the device: `--budget`, `--items-per-call`, ...); vLLM runs in its own
environment (`--vllm-python`, default .venv-vllm beside the checkout, as the vLLM tests start it) with this
checkout's sources (`--vllm-src` to point it at another, e.g. an older version of backends/vllm.py), OMP threads
= our torch threads (`--vllm-threads`). Printed per run: seconds, forward calls (ours) / generate calls and requests
(vLLM), tokens (ours: forwarded, unique; vLLM: prompt, read from its cache, rescored), and against ours: records
compared, same choices, max |delta| of the option scores. The RESULT line gives speedup_vs_vllm (letters: vLLM
seconds / ours) and the options' ratios. On a GPU: `--device cuda --dtype bfloat16` and a GPU build of vLLM in
`--vllm-python` (`--vllm-engine '{"gpu_memory_utilization": 0.5}'` for both engines on one GPU).

    python benchmarks/vs_vllm.py [--scorings both] [--items 9] [--shuffles 30] [--options-items 6]
        [--options-shuffles 5] [--vllm-reuse both] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from mcqa_toolkit.backends.hf import HFBackend
from mcqa_toolkit.backends.vllm_server import ENV, vllm_python
from mcqa_toolkit.run import Strategy, run

try:  # run as a script (python benchmarks/vs_vllm.py) or as a module (python -m benchmarks.vs_vllm)
    from _limit import device_facts
    from _results import write_json
    from _workload import add_arguments, engine_options, scorings, setup
except ModuleNotFoundError:
    from benchmarks._limit import device_facts
    from benchmarks._results import write_json
    from benchmarks._workload import add_arguments, engine_options, scorings, setup

HERE = Path(__file__).resolve().parent
WORKLOAD_KEYS = ("workload", "formats_dir", "dataset", "data_path", "item_params", "language", "shot_rule", "shots")
PATH_ARGS = {"formats_dir": "FORMATS_DIR", "data_path": "DATA_PATH", "item_params": "ITEM_PARAMS",
             "tokenizer": "TOKENIZER_DIR", "vllm_python": "VLLM_PYTHON", "vllm_src": "VLLM_SRC", "out": "OUT_DIR",
             "json": "JSON"}


def strategies(args: argparse.Namespace) -> dict[str, tuple[Strategy, int]]:
    """Per run: its strategy and number of items (the workload's shots, by the workload's rule)."""
    common = dict(style=args.style, shots=args.shots, shot_rule=args.rule, shot_ids=tuple(args.shot_ids or ()))
    out = {}
    if "letters" in scorings(args):
        out["letters"] = (Strategy(name="vs_vllm_letters", method="first_token", shuffles=args.shuffles, **common),
                          args.items)
    if "options" in scorings(args):
        out["options"] = (Strategy(name="vs_vllm_options", method="loglik", normalization="sum",
                                   shuffles=args.options_shuffles, **common), args.options_items)
    return out


def ours(lm, pool, evaluated, args, runs, out: Path) -> dict:
    """Our runs here, one fresh backend state each (its run-prefix cache empty, as vLLM's is)."""
    backend = HFBackend(lm, **engine_options(args))
    res = {}
    for name, (st, n) in runs.items():
        b = backend.renew()
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        run(evaluated[:n], b, st, out / f"ours_{name}", shot_pool=pool, dataset="vs_vllm", progress=False)
        seconds = time.perf_counter() - t0
        st_ = b.engine.stats
        res[name] = {"seconds": seconds, "records": str(out / f"ours_{name}"), "calls": st_.calls,
                     "load_1min": [load, os.getloadavg()[0]],
                     "items": st_.items, "forwarded": st_.forwarded, "unique": st_.unique, "padded": st_.padded,
                     "items_per_call": b.items_per_call}
        print(f"[ours] {name}: {seconds:.1f}s calls={st_.calls} forwarded={st_.forwarded} unique={st_.unique}",
              flush=True)
    return res


def vllm_model(model: str) -> str:
    """What vLLM loads: the embedded model's dequantised folder (vLLM's environment lacks the GGUF package), else
    `model` as given."""
    from mcqa_toolkit.backends.hf.loading import EMBEDDED, dequantised_dir, embedded_gguf

    return str(dequantised_dir(embedded_gguf(model))[0]) if model in EMBEDDED else model


def theirs(args, runs, out: Path) -> dict:
    """The vLLM runs, in .venv-vllm (one engine start, not timed in the runs)."""
    engine = {"dtype": args.dtype, "max_model_len": args.vllm_max_model_len, "seed": 0}
    if args.device == "cpu":
        engine.update(enforce_eager=True, kv_cache_memory_bytes=args.vllm_kv_bytes)
    engine.update(json.loads(args.vllm_engine))
    modes = {"on": [True], "off": [False], "both": [False, True]}[args.vllm_reuse]
    spec_runs = []
    for name, (st, n) in runs.items():
        for reuse in (modes if name == "options" else [True]):
            label = name if name == "letters" else f"options_{'cache' if reuse else 'nocache'}"
            spec_runs.append({"name": label, "strategy": st.to_dict(), "items": n, "reuse": reuse})
    spec = {"model": vllm_model(args.model), "name": "vs_vllm", "engine": engine, "out": str(out), "runs": spec_runs,
            "workload": {k: getattr(args, k) for k in WORKLOAD_KEYS}}
    threads = args.vllm_threads or torch.get_num_threads()
    env = {**os.environ, **ENV, "OMP_NUM_THREADS": str(threads), "TMPDIR": str(out),
           "PYTHONPATH": str(Path(args.vllm_src or HERE.parent).resolve())}
    done = subprocess.run([str(args.vllm_python or vllm_python()), str(HERE / "_vllm_side.py"), json.dumps(spec)],
                          capture_output=True, text=True, env=env, timeout=args.vllm_timeout)
    if done.returncode != 0:
        raise RuntimeError(f"the vLLM side failed ({done.returncode}):\n{done.stderr[-4000:]}")
    res = json.loads(done.stdout.strip().splitlines()[-1])
    res["threads"] = threads
    return res


def _scores(folder: str) -> pd.DataFrame:
    frame = pd.read_parquet(Path(folder) / "records.parquet")
    return frame.set_index(["item_id", "shuffle"]).sort_index()[["option_scores", "choice"]]


def compare(mine: str, other: str) -> dict:
    """Records compared, same choices, max |delta| of the option scores (NaN-aware)."""
    a, b = _scores(mine), _scores(other)
    b = b.loc[a.index]
    delta = max(float(np.nanmax(np.abs(np.asarray(x, float) - np.asarray(y, float))))
                for x, y in zip(a["option_scores"], b["option_scores"]))
    return {"records": len(a), "same_choices": int((a["choice"].to_numpy() == b["choice"].to_numpy()).sum()),
            "max_delta": delta}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=9, shuffles=30)
    ap.set_defaults(scorings="both")
    ap.add_argument("--options-items", type=int, default=6)
    ap.add_argument("--options-shuffles", type=int, default=5)
    ap.add_argument("--vllm-reuse", choices=("on", "off", "both"), default="both",
                    help="options: vLLM reads its prefix cache (on), skips it as by default (off), or both runs")
    ap.add_argument("--vllm-python", default=None, help="vLLM's Python (default: .venv-vllm beside the checkout)")
    ap.add_argument("--vllm-src", default=None, help="project sources the vLLM side imports (default: this checkout)")
    ap.add_argument("--vllm-threads", type=int, default=0, help="vLLM's OMP threads (default: our torch threads)")
    ap.add_argument("--vllm-kv-bytes", type=int, default=2**30, help="CPU: vLLM's KV cache size in bytes")
    ap.add_argument("--vllm-max-model-len", type=int, default=4096)
    ap.add_argument("--vllm-engine", default="{}", help="more vllm.LLM arguments, as JSON")
    ap.add_argument("--vllm-timeout", type=int, default=7200)
    ap.add_argument("--out", default=None, help="records folders (default: a temporary folder)")
    ap.add_argument("--json", default=None, help="also write the results (and the device, versions) to this file")
    args = ap.parse_args()
    if args.random_shape:
        raise SystemExit("vs_vllm compares a model both engines load (--model): random shapes exist in memory only")
    lm, pool, evaluated = setup(args)
    runs = strategies(args)
    out = Path(args.out or tempfile.mkdtemp(prefix="vs_vllm_"))
    loads = {"before": _load()}
    mine = ours(lm, pool, evaluated, args, runs, out)
    loads["between"] = _load()
    other = theirs(args, runs, out)
    loads["after"] = _load()
    print(f"load average (1, 5, 15 min): before {loads['before']} | between {loads['between']} | after "
          f"{loads['after']}; vLLM engine start {other['start_s']:.1f}s, {other['threads']} OMP threads")
    rows = {}
    for label, r in other["runs"].items():
        name = "letters" if label == "letters" else "options"
        cmp = compare(mine[name]["records"], r["records"])
        u = r["usage"]
        rows[label] = {**cmp, "seconds_vllm": r["seconds"], "seconds_ours": mine[name]["seconds"],
                       "load_1min_ours": mine[name]["load_1min"], "load_1min_vllm": r["load_1min"],
                       "speedup": r["seconds"] / mine[name]["seconds"], "reads_prefix_cache": r["reads_prefix_cache"],
                       "vllm_usage": u}
        print(f"[{label}] ours {mine[name]['seconds']:.1f}s ({mine[name]['calls']} forward calls, "
              f"{mine[name]['forwarded']} tokens forwarded, {mine[name]['unique']} unique) | vLLM {r['seconds']:.1f}s "
              f"({u.get('calls', 0):.0f} generate calls, {u.get('requests', 0):.0f} requests, "
              f"{u.get('prompt_tokens', 0):.0f} prompt tokens, {u.get('cached_tokens', 0):.0f} from its cache, "
              f"{u.get('rescored', 0):.0f} rescored; reads prefix cache: {r['reads_prefix_cache']}) | speedup "
              f"{rows[label]['speedup']:.2f}x | same choices {cmp['same_choices']}/{cmp['records']} max |delta| "
              f"{cmp['max_delta']:.2e} | 1-min load before/after: ours {mine[name]['load_1min']} vLLM "
              f"{r['load_1min']}", flush=True)
    parts = [f"speedup_vs_vllm={rows['letters']['speedup']:.2f}" if "letters" in rows else "speedup_vs_vllm=nan"]
    parts += [f"{k}_speedup={v['speedup']:.1f}" for k, v in rows.items() if k != "letters"]
    same = all(v["same_choices"] == v["records"] for v in rows.values())
    print("RESULT " + " ".join(parts) + f" same_choices={same} "
          f"max_delta={max(v['max_delta'] for v in rows.values()):.2e}")
    if args.json:
        recorded = {k: (PATH_ARGS[k] if k in PATH_ARGS and v is not None else v) for k, v in vars(args).items()}
        write_json(args.json, {"args": recorded, "device": device_facts(lm), "load_average": loads,
                               "ours": {k: {**v, "records": f"OUT_DIR/ours_{k}"} for k, v in mine.items()},
                               "vllm": {k: v for k, v in other.items() if k != "runs"}, "results": rows})


if __name__ == "__main__":
    main()
