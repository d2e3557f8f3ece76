"""Our engine against vLLM in-process (backends/vllm.py), on the same items through the project's own run(),
scoring time only (engine start and model load excluded on both sides), the two sides' runs alternating.

The workload is the other benchmarks' (_workload.py): by default `enem-long`, real-length ENEM prompts (the ENEM
paper's fixed 4-shot block of real 2022 records plus our passages, the real 2022 natural-science items first), the
embedded Gemma-3-270M in fp32; `--workload exam --dataset enem --data-path DIR --item-params CSV` takes whole real
exams. Scorings (`--scorings letters|options|both`):
  letters  first_token over `--items` items x `--shuffles` shuffles: ours = the KV-prefix engine; vLLM = one
           generated token with `logprob_token_ids` (every shown letter's log-prob), prefix caching on;
  options  loglik (sum) over `--options-items` x `--options-shuffles`: vLLM = prompt log-probs, read from its
           prefix cache where the installed vLLM allows it (`--vllm-reuse on`, default), or skipping it as vLLM does
           by default for prompt log-probs (`off`, lm-eval's vLLM path), or both runs.
Ours runs here (the device's engine budget unless `--budget`, `--items-per-call`, ... say otherwise); vLLM runs in
its own environment (`--vllm-python`, default .venv-vllm beside the checkout) as a subprocess that stays up
(_vllm_side.py), with this checkout's sources (`--vllm-src` to point it at another), OMP threads = our torch
threads (`--vllm-threads`), torch.compile allowed (vLLM's default; `--vllm-eager` for `enforce_eager`): if its
compiled start fails, it starts eager and the reason is in the output (`vllm.compile_error`). Runs alternate: per
round (`--rounds`), each scoring on our side then on vLLM's, the side going first swapped every round; every run
starts with an empty prefix cache on both sides. Recorded from inside each side per run: seconds, the 1-minute load
average before and after, torch's threads and the CPU seconds the side's process used over the run's seconds
(`cores_busy`: the threads it actually kept busy). Per scoring and round: records compared, same choices, max
|delta| of the option scores, and the speed-up (vLLM seconds / ours); the RESULT line gives the medians over rounds.
On a GPU: `--device cuda --dtype bfloat16` and a GPU build of vLLM in `--vllm-python`
(`--vllm-engine '{"gpu_memory_utilization": 0.5}'` for both engines on one GPU).

    python benchmarks/vs_vllm.py [--scorings both] [--items 9] [--shuffles 30] [--options-items 6]
        [--options-shuffles 5] [--vllm-reuse on] [--rounds 2] [--json out.json]

JSON (`--json`): `args` (paths replaced by their option names), `device`, `load_average` (before / after),
`ours` (engine options, threads), `vllm` (start seconds, `compile`, `compile_error` or null, threads, provenance),
`runs` (one entry per run: side, scoring, round, seconds, load_1min, torch_threads, cores_busy, usage) and
`results` (per scoring: per round `speedup`, `seconds_ours`, `seconds_vllm`, `records`, `same_choices`,
`max_delta`, and their medians).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from mcqa_toolkit.backends.hf import HFBackend, compute
from mcqa_toolkit.backends.vllm_server import ENV, vllm_python
from mcqa_toolkit.run import Strategy, run

try:  # run as a script (python benchmarks/vs_vllm.py) or as a module (python -m benchmarks.vs_vllm)
    from _reference import device_facts
    from _results import write_json
    from _workload import add_arguments, engine_options, scorings, setup
except ModuleNotFoundError:
    from benchmarks._reference import device_facts
    from benchmarks._results import write_json
    from benchmarks._workload import add_arguments, engine_options, scorings, setup

HERE = Path(__file__).resolve().parent
WORKLOAD_KEYS = ("workload", "formats_dir", "dataset", "data_path", "item_params", "language", "shot_rule", "shots",
                 "per_subject")
PATH_ARGS = {"formats_dir": "FORMATS_DIR", "data_path": "DATA_PATH", "item_params": "ITEM_PARAMS",
             "tokenizer": "TOKENIZER_DIR", "vllm_python": "VLLM_PYTHON", "vllm_src": "VLLM_SRC", "out": "OUT_DIR",
             "json": "JSON"}


def strategies(args: argparse.Namespace) -> dict[str, tuple[Strategy, int]]:
    """Per scoring: its strategy and number of items (the workload's shots, by the workload's rule)."""
    common = dict(style=args.style, shots=args.shots, shot_rule=args.rule, shot_ids=tuple(args.shot_ids or ()))
    out = {}
    if "letters" in scorings(args):
        out["letters"] = (Strategy(name="vs_vllm_letters", method="first_token", shuffles=args.shuffles, **common),
                          args.items)
    if "options" in scorings(args):
        out["options"] = (Strategy(name="vs_vllm_options", method="loglik", normalization="sum",
                                   shuffles=args.options_shuffles, **common), args.options_items)
    return out


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def ours(backend: HFBackend, pool, evaluated, st: Strategy, n: int, folder: Path) -> dict:
    """One run on our side, on a renewed backend (its run-prefix cache empty, as vLLM's is)."""
    b = backend.renew()
    load, cpu = os.getloadavg()[0], cpu_seconds()
    t0 = time.perf_counter()
    run(evaluated[:n], b, st, folder, shot_pool=pool, dataset="vs_vllm", progress=False)
    seconds = time.perf_counter() - t0
    s = b.engine.stats
    return {"seconds": seconds, "records": str(folder), "load_1min": [load, os.getloadavg()[0]],
            "cores_busy": (cpu_seconds() - cpu) / seconds, "torch_threads": torch.get_num_threads(),
            "usage": {"calls": s.calls, "items": s.items, "forwarded": s.forwarded, "unique": s.unique,
                      "padded": s.padded}}


def vllm_model(model: str) -> str:
    """What vLLM loads: the embedded model's dequantised folder (vLLM's environment lacks the GGUF package), else
    `model` as given."""
    from mcqa_toolkit.backends.hf.loading import EMBEDDED, dequantised_dir, embedded_gguf

    return str(dequantised_dir(embedded_gguf(model))[0]) if model in EMBEDDED else model


class VLLMSide:
    """The vLLM subprocess (_vllm_side.py): started once, asked one run at a time."""

    def __init__(self, args: argparse.Namespace, out: Path):
        engine = {"dtype": args.dtype, "max_model_len": args.vllm_max_model_len, "seed": 0}
        if args.device == "cpu":
            engine["kv_cache_memory_bytes"] = args.vllm_kv_bytes
        if args.vllm_eager:
            engine["enforce_eager"] = True
        engine.update(json.loads(args.vllm_engine))
        spec = {"model": vllm_model(args.model), "name": "vs_vllm", "engine": engine, "out": str(out),
                "workload": {k: getattr(args, k) for k in WORKLOAD_KEYS}}
        self.threads = args.vllm_threads or torch.get_num_threads()
        env = {**os.environ, **ENV, "OMP_NUM_THREADS": str(self.threads), "TMPDIR": str(out),
               "PYTHONPATH": str(Path(args.vllm_src or HERE.parent).resolve())}
        self.proc = subprocess.Popen([str(args.vllm_python or vllm_python()), str(HERE / "_vllm_side.py"),
                                      json.dumps(spec)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        self.ready = self._reply("ready")

    def _reply(self, key: str) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the vLLM side stopped (exit {self.proc.wait()}); see its stderr above")
            if line.startswith("{"):
                msg = json.loads(line)
                if key in msg:
                    return msg[key] if key == "ready" else msg

    def score(self, name: str, st: Strategy, n: int, reuse: bool) -> dict:
        self.proc.stdin.write(json.dumps({"name": name, "strategy": st.to_dict(), "items": n, "reuse": reuse}) + "\n")
        self.proc.stdin.flush()
        return self._reply("run")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=300)


def _scores(folder: str) -> pd.DataFrame:
    frame = pd.read_parquet(Path(folder) / "records.parquet")
    return frame.set_index(["item_id", "shuffle"]).sort_index()[["option_scores", "choice"]]


def compare(mine: str, other: str) -> dict:
    """Records compared, same choices, max |delta| of the option scores (NaN-aware)."""
    a, b = _scores(mine), _scores(other)
    b = b.loc[a.index]
    delta = max(float(np.nanmax(np.abs(np.asarray(x, float) - np.asarray(y, float))))
                for x, y in zip(a["option_scores"], b["option_scores"], strict=True))
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
    ap.add_argument("--vllm-reuse", choices=("on", "off", "both"), default="on",
                    help="options: vLLM reads its prefix cache (on), skips it as by default (off), or both runs")
    ap.add_argument("--rounds", type=int, default=2, help="alternations of the two sides per scoring")
    ap.add_argument("--vllm-eager", action="store_true", help="vLLM with enforce_eager (torch.compile off)")
    ap.add_argument("--vllm-python", default=None, help="vLLM's Python (default: .venv-vllm beside the checkout)")
    ap.add_argument("--vllm-src", default=None, help="project sources the vLLM side imports (default: this checkout)")
    ap.add_argument("--vllm-threads", type=int, default=0, help="vLLM's OMP threads (default: our torch threads)")
    ap.add_argument("--vllm-kv-bytes", type=int, default=2**30, help="CPU: vLLM's KV cache size in bytes")
    ap.add_argument("--vllm-max-model-len", type=int, default=4096)
    ap.add_argument("--vllm-engine", default="{}", help="more vllm.LLM arguments, as JSON")
    ap.add_argument("--out", default=None, help="records folders (default: a temporary folder)")
    ap.add_argument("--json", default=None, help="also write the results (and the device, versions) to this file")
    args = ap.parse_args()
    if args.random_shape:
        raise SystemExit("vs_vllm compares a model both engines load (--model): random shapes exist in memory only")
    lm, pool, evaluated = setup(args)
    backend = HFBackend(lm, **engine_options(args))
    out = Path(args.out or tempfile.mkdtemp(prefix="vs_vllm_"))
    loads = {"before": _load()}
    side = VLLMSide(args, out)
    print(f"vLLM ready: start {side.ready['start_s']:.1f}s compile={side.ready['compile']} "
          f"({side.ready['compile_error'] or 'no error'}), torch threads {side.ready['torch_threads']}", flush=True)
    runs, results, warm = [], {}, {}
    if backend.engine.fused:  # its first calls compile: outside the timed runs, as vLLM's compile is in its start
        for name, (st, _) in strategies(args).items():
            warm[name] = ours(backend, pool, evaluated, st, 1, out / f"ours_warm_{name}")["seconds"]
            print(f"ours: fused warm-up ({name}, 1 item) {warm[name]:.1f}s", flush=True)
    modes = {"on": [True], "off": [False], "both": [False, True]}[args.vllm_reuse]
    try:
        for rnd in range(args.rounds):
            for name, (st, n) in strategies(args).items():
                for reuse in (modes if name == "options" else [True]):
                    label = name if name == "letters" else f"options_{'cache' if reuse else 'nocache'}"
                    pair = {}
                    for who in (("ours", "vllm") if rnd % 2 == 0 else ("vllm", "ours")):
                        folder = out / f"{who}_{label}_{rnd}"
                        pair[who] = ours(backend, pool, evaluated, st, n, folder) if who == "ours" else \
                            side.score(f"vllm_{label}_{rnd}", st, n, reuse)
                        runs.append({"side": who, "scoring": label, "round": rnd,
                                     **{k: v for k, v in pair[who].items() if k not in ("records", "run")}})
                    cmp = compare(pair["ours"]["records"], pair["vllm"]["records"])
                    row = {**cmp, "round": rnd, "seconds_ours": pair["ours"]["seconds"],
                           "seconds_vllm": pair["vllm"]["seconds"],
                           "speedup": pair["vllm"]["seconds"] / pair["ours"]["seconds"]}
                    results.setdefault(label, {"rounds": []})["rounds"].append(row)
                    print(f"[{label} round {rnd}] ours {row['seconds_ours']:.1f}s ({pair['ours']['cores_busy']:.2f} "
                          f"cores busy) | vLLM {row['seconds_vllm']:.1f}s ({pair['vllm']['cores_busy']:.2f} cores "
                          f"busy, {pair['vllm']['usage'].get('prompt_tokens', 0):.0f} prompt tokens, "
                          f"{pair['vllm']['usage'].get('cached_tokens', 0):.0f} from its cache) | speedup "
                          f"{row['speedup']:.2f}x | same choices {cmp['same_choices']}/{cmp['records']} max |delta| "
                          f"{cmp['max_delta']:.2e}", flush=True)
    finally:
        side.close()
    loads["after"] = _load()
    for r in results.values():
        for key in ("speedup", "seconds_ours", "seconds_vllm", "max_delta"):
            r[f"median_{key}"] = statistics.median(x[key] for x in r["rounds"])
        r["same_choices_all"] = all(x["same_choices"] == x["records"] for x in r["rounds"])
    print(f"load average (1, 5, 15 min): before {loads['before']} | after {loads['after']}")
    parts = [f"{k}_speedup={v['median_speedup']:.2f}" for k, v in results.items()]
    print("RESULT " + " ".join(parts) + f" same_choices={all(v['same_choices_all'] for v in results.values())} "
          f"max_delta={max(v['median_max_delta'] for v in results.values()):.2e} vllm_compile={side.ready['compile']}")
    if args.json:
        recorded = {k: (PATH_ARGS[k] if k in PATH_ARGS and v is not None else v) for k, v in vars(args).items()}
        vllm = {k: v for k, v in side.ready.items() if k != "provenance"}
        vllm["provenance"] = {k: v for k, v in side.ready["provenance"].items() if k != "source"}
        e = backend.engine
        write_json(args.json, {"args": recorded, "device": device_facts(lm), "load_average": loads,
                               "ours": {"attention": e.attention, "linear": e.linear,
                                        "items_per_call": e.items_per_call, "max_batch_tokens": e.max_batch_tokens,
                                        "max_batch_rows": e.max_batch_rows, "compile": bool(e.fused),
                                        "fused": e.fused, "fused_warm_up_s": warm or None},
                               "cpu": compute.cpu(),
                               "vllm": vllm, "runs": runs, "results": results}, lm.device, lm.tokenizer)


if __name__ == "__main__":
    main()
