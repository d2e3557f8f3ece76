"""What the engine's self-check costs on a model's first load, and on a later one: the embedded Gemma-3-270M (or
--model), in a process of its own, verdicts kept in a fresh folder (the first check) and then read from it (a later
load); set against a whole-exam run's time from a committed scoring_throughput raw file (`--exam`: its letters
seconds per item x --exam-items).

    python benchmarks/selfcheck_cost.py --json results/benchmarks/engine5_DATE/selfcheck_cost.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import tempfile
import time
from pathlib import Path

import torch

from mcqa_toolkit.backends.hf import load_model, selfcheck
from mcqa_toolkit.backends.hf.engine import PrefixScorer

try:
    from _results import write_json
except ModuleNotFoundError:
    from benchmarks._results import write_json

REPO = Path(__file__).resolve().parents[1]
EXAM = REPO / "results" / "benchmarks" / "engine4_2026-11-29" / "throughput_exam2021_cpu.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--exam", default=str(EXAM), help="a scoring_throughput raw file of the whole-exam workload")
    ap.add_argument("--exam-items", type=int, default=40)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    lm = load_model(args.model, device=args.device, dtype=args.dtype)
    folder = Path(tempfile.mkdtemp(prefix="selfcheck_"))
    selfcheck.cache_dir = lambda: folder
    rows = {}
    for budget, options in (("cpu", {}), ("cuda", {"attention": "masks", "linear": "torch", "items_per_call": 16})):
        t0 = time.perf_counter()
        engine = PrefixScorer(lm, **options)
        first = time.perf_counter() - t0
        selfcheck._MEMO.clear()
        t0 = time.perf_counter()
        again = PrefixScorer(lm, **options)
        later = time.perf_counter() - t0
        assert again.verdict.source == "cached"
        rows[budget] = {"first_seconds": round(first, 3), "check_seconds": round(engine.verdict.seconds, 3),
                        "later_seconds": round(later, 4), "path": engine.path, "asked": engine.verdict.asked,
                        "deltas": engine.verdict.deltas, "probe_tokens": engine.verdict.probe_tokens}
        print(budget, rows[budget], flush=True)
    exam = json.loads(Path(args.exam).read_text())
    per_item = exam["results"]["letters"]["s_per_item_ours"]
    run = per_item * args.exam_items
    result = {"date": datetime.date.today().isoformat(), "model": args.model, "dtype": args.dtype,
              "device": args.device, "threads": torch.get_num_threads(), "rows": rows,
              "exam_run": {"raw_file": str(Path(args.exam).relative_to(REPO)), "seconds_per_item": per_item,
                           "items": args.exam_items, "seconds": round(run, 1),
                           "first_check_share": round(rows["cpu"]["first_seconds"] / run, 4)}}
    print(result["exam_run"])
    write_json(args.json, result, lm.device, lm.tokenizer)


if __name__ == "__main__":
    main()
