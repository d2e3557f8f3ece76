"""Write the item-bank sample (data/item_bank_sample/): a population of simulated models whose answers to the
demo exam's Portuguese items are written by the real tools, half by lm-evaluation-harness (`--log_samples`
files) and half by inspect_ai (.eval logs). notebooks/17_item_bank calibrates an item bank from it.

Each model j has ability theta_j ~ N(0, 1) (seeded) and answers from the demo items' 3PL parameters
(interop.simulated). Usage (about 2-4 minutes on 2 cores; the tools must be installed: `make install`):

    python scripts/make_item_bank_sample.py [--out data/item_bank_sample] [--models 24] [--seed 0]
    python scripts/make_item_bank_sample.py --only 0 3 --out /tmp/x   # just models 0 and 3 (tests)
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from mcqa_toolkit.datasets import load
from mcqa_toolkit.interop.simulated import run_inspect, run_lm_eval, simulate_answers, write_lm_eval_task

LANGUAGE = "pt"


def model_name(j: int) -> str:
    return f"sim-{j:02d}"


def population(n_models: int, seed: int):
    """(items, answers): the demo items in LANGUAGE and every model's simulated answers."""
    items = list(load("demo", language=LANGUAGE))
    theta = np.random.default_rng(seed).normal(0.0, 1.0, n_models)
    return items, simulate_answers(items, theta, seed=seed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="data/item_bank_sample")
    ap.add_argument("--models", type=int, default=24, help="models in all; even ones by lm-eval, odd by inspect")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", type=int, nargs="*", help="write only these models")
    args = ap.parse_args(argv)
    out = Path(args.out)
    items, ans = population(args.models, args.seed)
    todo = range(args.models) if args.only is None else args.only
    with tempfile.TemporaryDirectory() as tmp:
        task_dir = write_lm_eval_task(items, tmp).parent
        for j in todo:
            name = model_name(j)
            if j % 2 == 0:
                target = out / "lm-eval" / name
                shutil.rmtree(target, ignore_errors=True)
                run_lm_eval(task_dir, items, ans.scores[j], name, Path(tmp) / "lm")
                src = next((Path(tmp) / "lm").glob(f"{name}*"))
                shutil.copytree(src, target)
                shutil.rmtree(src)
                for path in target.rglob("*.json*"):   # lm-eval records its task's files by path: committed as TMP
                    path.write_text(path.read_text(encoding="utf-8").replace(tmp, "TMP"), encoding="utf-8")
            else:
                target = out / "inspect" / f"{name}.eval"
                target.parent.mkdir(parents=True, exist_ok=True)
                log = run_inspect(items, ans.scores[j], ans.choice[j], name, Path(tmp) / "inspect")
                shutil.move(log, target)
            print(f"{name}: theta {ans.theta[j]:+.3f}, accuracy {ans.correct[j].mean():.3f} -> {target}", flush=True)
    truth = {"seed": args.seed, "language": LANGUAGE, "models": {model_name(j): float(ans.theta[j])
                                                                for j in range(args.models)}}
    if args.only is None:
        (out / "truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
