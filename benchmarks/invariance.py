"""How far a record's scores move with the way they are computed: the raw data of docs/invariance.md.

The same run is computed with one execution choice changed at a time and compared with the baseline (this
process's torch threads, the device's engine budget, in-process, without interruption): enem-long's real-length
ENEM prompts (4 shots, ~1,500 tokens), the embedded Gemma-3-270M in fp32 on the CPU, each scoring through the
project's run() into its own run folder (letters: first_token; options: loglik with the sum). Per choice and
scoring: records compared, max |delta| of any option score, the share of records with the same choice, and the
equality rule's verdict (records.compare_runs; n_forwarded_tokens left out where the choice changes what is
forwarded, said in `ignored`).

Choices: torch threads (1 instead of the baseline's); the process left on another thread count and with
bf16-rounded fp32 products by other work (the baseline's backend scoring again: the engine pins its own); the
engine's items-per-call budget (CUDA's 16 items, 32,768
slots, 128 rows, run on this CPU); the rows per forward call (8 instead of 64: the engine's batch size); a resume
after the run's process was SIGKILLed mid-run; a Ray worker (default resources, and one of 1 CPU) instead of
in-process; a llama-cpp-python server's history (benchmarks/_server_history.py).

    OPENBLAS_NUM_THREADS=1 python benchmarks/invariance.py [--items 4 --shuffles 4]   # enem-long (9 items)
                                     [--json results/benchmarks/invariance_DATE.json]
    # the committed table: 16 real ENEM 2021 items (4 per area), enough to fill the CUDA budget's 16 items per call
    P=../shared/reference/enem_exams/pt-br; OPENBLAS_NUM_THREADS=1 python benchmarks/invariance.py --workload exam
        --dataset enem --data-path $P/ENEM_2021_*_CO_PROVA_*.csv --per-subject 4 --items 16 --shuffles 4
        --item-params ../shared/reference/enem_inep/ITENS_PROVA_2021.csv --json results/benchmarks/invariance_DATE.json
    # the same on an AVX2 machine's kernels: ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 before the command
    # short prompts: the demo exam, 0-shot (where the issue saw 1 thread against 2 move the scores)
    OPENBLAS_NUM_THREADS=1 python benchmarks/invariance.py --workload exam --dataset demo --shots 0 --items 12
                                     --shuffles 2 --json results/benchmarks/invariance_demo_DATE.json
"""
from __future__ import annotations

import argparse
import datetime
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from mcqa_toolkit.backends.hf import HFBackend, compute
from mcqa_toolkit.backends.hf.engine import BUDGETS
from mcqa_toolkit.records.compare_runs import score_delta
from mcqa_toolkit.records.equality import record_differences
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run import Strategy, run

try:  # run as a script (python benchmarks/invariance.py) or as a module
    from _results import write_json
    from _workload import add_arguments, setup
except ModuleNotFoundError:
    from benchmarks._results import write_json
    from benchmarks._workload import add_arguments, setup

HERE = Path(__file__).resolve().parent
SCORINGS = {"letters": dict(method="first_token"), "options": dict(method="loglik", normalization="sum")}


def strategy(args: argparse.Namespace, scoring: str) -> Strategy:
    return Strategy(name=f"invariance_{scoring}", style=args.style, shots=args.shots, shot_rule=args.rule,
                    shot_ids=tuple(args.shot_ids or ()), shuffles=args.shuffles, **SCORINGS[scoring])


def compared(base: Path, other: Path, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    """The rule's verdict (run_id aside: each run has its own folder) and how far the scores are apart."""
    a, b = RunDir(base).load(), RunDir(other).load()
    d = score_delta(a, b)
    return {"records": d.records, "max_abs_delta": d.max_abs_delta, "same_choice": d.same_choice,
            "equal_by_rule": not record_differences(a, b, ignore=("run_id", *ignore)), "ignored": list(ignore)}


def in_process(lm, items, pool, st: Strategy, out: Path, threads: int | None = None, **engine: Any) -> Path:
    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        run(items, HFBackend(lm, **engine), st, out, shot_pool=pool, dataset="enem-long", progress=False)
    finally:
        torch.set_num_threads(before)
    return out


def after_a_process_change(lm, items, pool, st: Strategy, out: Path, backend: HFBackend) -> Path:
    """The baseline's backend (renewed) scoring again while the process is set to other threads and to bf16-rounded
    fp32 products (torch.set_float32_matmul_precision("medium")), as other work in a notebook may leave it: the
    engine pins its own (backends/hf/compute.py)."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1 if threads > 1 else 2)
        torch.set_float32_matmul_precision("medium")
        run(items, backend.renew(), st, out, shot_pool=pool, dataset="enem-long", progress=False)
    finally:
        torch.set_float32_matmul_precision("highest")
        torch.set_num_threads(threads)
    return out


CHILD = """
import sys, torch
sys.path.insert(0, {here!r})
from mcqa_toolkit.backends.hf import HFBackend, load_model
from mcqa_toolkit.run import run
import pickle
items, pool, st = pickle.load(open({spec!r}, "rb"))
torch.set_num_threads({threads})
run(items, HFBackend(load_model("gemma-3-270m", device="cpu", dtype="float32")), st, {out!r}, shot_pool=pool,
    dataset="enem-long", progress=False)
"""


def killed_then_resumed(lm, items, pool, st: Strategy, out: Path, after: int) -> tuple[Path, int]:
    """The run in a child process SIGKILLed once `after` records are on disk, then resumed here; (folder,
    records the killed process had written)."""
    import pickle

    spec = out.parent / f"{out.name}.pickle"
    spec.write_bytes(pickle.dumps((items, pool, st)))
    code = CHILD.format(here=str(HERE), spec=str(spec), out=str(out), threads=torch.get_num_threads())
    child = subprocess.Popen([sys.executable, "-c", code], env=os.environ.copy())
    try:
        deadline = time.monotonic() + 900
        while len(RunDir(out).read_records()) < after:
            if child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the child ended (exit {child.returncode}) or stalled before {after} records")
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    written = len(RunDir(out).read_records())
    run(items, HFBackend(lm), st, out, shot_pool=pool, dataset="enem-long", progress=False)
    return out, written


def on_ray(items, pool, st: Strategy, out: Path, resources: dict[str, Any] | None) -> tuple[Path, dict]:
    from mcqa_toolkit.run.pool import RayPool

    entry = {"model": "gemma-3-270m", "device": "cpu", "dtype": "float32",
             **({"resources": resources} if resources else {})}
    with RayPool("local", workers=1) as ray_pool:
        run(items, entry, st, out, shot_pool=pool, dataset="enem-long", progress=False, pool=ray_pool)
    return out, RunDir(out).provenance()["pool"]["resources_per_worker"]


def engine_of(b: Any) -> dict[str, Any]:
    """A budget as an HFBackend's engine options (all but how it was chosen)."""
    return {k: v for k, v in vars(b).items() if k != "source"}


def budget(b: Any) -> str:
    """An engine budget as the table names it: what a forward call carries and how it computes."""
    return (f"{b.items_per_call} item(s), {b.max_batch_tokens:,} slots, {b.max_batch_rows} rows, {b.attention} "
            f"attention, {b.linear} linear")


Variant = tuple[str, str, str, Callable[[], Any], tuple[str, ...]]


def variants_of(args: argparse.Namespace, lm: Any, evaluated: list, pool: list, st: Any, where: Path,
                backend: Any, threads: int) -> list[Variant]:
    """The table's rows for one scoring method: (choice, baseline, variant, how to run it, fields it may change)."""
    variants: list[Variant] = [
        ("torch threads", f"{threads}", "1", lambda: in_process(lm, evaluated, pool, st, where / "t1",
                                                               threads=1), ()),
        ("items-per-call budget", f"CPU: {budget(BUDGETS['cpu'])}", f"CUDA: {budget(BUDGETS['cuda'])}",
         lambda: in_process(lm, evaluated, pool, st, where / "cuda", **engine_of(BUDGETS["cuda"])),
         ("n_forwarded_tokens",)),
        ("process state left by other work", "as the engine was made",
         "the process on another thread count with bf16-rounded fp32 products",
         lambda: after_a_process_change(lm, evaluated, pool, st, where / "process", backend), ()),
        ("rows per forward call (batch size)", "64", "8",
         lambda: in_process(lm, evaluated, pool, st, where / "rows8", max_batch_rows=8),
         ("n_forwarded_tokens",)),
        ("resume after SIGKILL mid-run", "one uninterrupted run", "killed after 1 item, resumed",
         lambda: killed_then_resumed(lm, evaluated, pool, st, where / "resumed", args.shuffles),
         ("n_forwarded_tokens",)),
    ]
    if not args.no_ray:
        variants += [
            ("Ray worker (default resources) vs in-process", "in-process", "1 worker, default resources",
             lambda: on_ray(evaluated, pool, st, where / "ray", None), ("n_forwarded_tokens",)),
            ("Ray worker of 1 CPU vs in-process", "in-process", "1 worker, resources {num_cpus: 1}",
             lambda: on_ray(evaluated, pool, st, where / "ray1", {"num_cpus": 1}),
             ("n_forwarded_tokens",))]
    return variants


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=4, shuffles=4)
    ap.add_argument("--no-ray", action="store_true", help="leave the Ray rows out (no ray installed)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    lm, pool, evaluated = setup(args)
    threads = torch.get_num_threads()
    load = {"before": os.getloadavg()[0]}
    root = Path(tempfile.mkdtemp(prefix="invariance_"))
    rows: list[dict[str, Any]] = []
    engines: dict[str, Any] = {}
    for scoring in SCORINGS:
        st = strategy(args, scoring)
        backend = HFBackend(lm)
        base = root / scoring / "baseline"
        run(evaluated, backend, st, base, shot_pool=pool, dataset="enem-long", progress=False)
        engines[scoring] = RunDir(base).provenance()["model"]["engine"]  # the baseline's engine path and budget
        variants = variants_of(args, lm, evaluated, pool, st, root / scoring, backend, threads)
        for choice, baseline, variant, make, ignore in variants:
            t0 = time.perf_counter()
            got = make()
            folder, extra = got if isinstance(got, tuple) else (got, None)
            row = {"choice": choice, "scoring": scoring, "baseline": baseline, "variant": variant,
                   **compared(base, folder, ignore), "seconds": round(time.perf_counter() - t0, 1)}
            if extra is not None:
                row["detail"] = extra if isinstance(extra, dict) else {"records_before_the_kill": extra}
            rows.append(row)
            print(row, flush=True)
    load["after"] = os.getloadavg()[0]
    name = args.workload if args.workload == "enem-long" else f"{args.dataset} {args.language}"
    result = {"date": datetime.date.today().isoformat(), "command": "python benchmarks/invariance.py "
              + " ".join(sys.argv[1:]).replace(str(args.json or "\0"), "JSON"),
              "model": "gemma-3-270m fp32 cpu", "torch": torch.__version__, "threads": threads, "cpu": compute.cpu(),
              "cpus": os.cpu_count(), "workload": {"name": name, "items": len(evaluated),
                                                   "shuffles": args.shuffles, "shots": args.shots},
              "load_1min": load, "baseline_engine": engines, "rows": rows}
    write_json(args.json, result, lm.device, lm.tokenizer)


if __name__ == "__main__":
    main()
