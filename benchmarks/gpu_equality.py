"""Our engine vs the naive loop in half precision, per dtype x attention x layout, on real-length prompts.

For each `--random-shape` (published shapes with random weights, _shapes.py) an fp32 master model is built on
the device; every (dtype, attention) variant is that model's weights cast to the dtype. On the `enem-long`
workload (real-length ENEM prompts, 4 shots, `--shuffles` option orders; letters and options) it prints, per
variant and layout (packed trie rows one item per call / unpacked rows / every item in one block sharing calls /
that block on static shapes, captured as CUDA graphs on CUDA):
  engine_vs_naive  max |ours - naive| in that dtype;
  naive_noise      max |naive - naive in another layout| (right-padded batches: precision.naive_padded_scores),
                   the rounding noise of the naive path itself in that dtype;
  engine_err / naive_err  max |x - fp32 naive| of our engine and of the naive loop in that dtype;
  same_choices     identical argmax where the naive path's top-2 margin exceeds the noise (n compared).
Random weights give near-uniform distributions (near-tied options), hence the margin filter.

    python benchmarks/gpu_equality.py --device cuda --random-shape gemma-3-1b --tokenizer DIR [--json out.json]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from mcqa_toolkit.backends.hf import wrap  # noqa: E402
from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores  # noqa: E402
from mcqa_toolkit.backends.hf.precision import choice_agreement, max_delta, naive_padded_scores  # noqa: E402

try:
    from _enem_long import enem_long
    from _reference import device_facts
    from _results import write_json
    from _shapes import random_model
    from _workload import SCORINGS, build
except ModuleNotFoundError:
    from benchmarks._enem_long import enem_long
    from benchmarks._reference import device_facts
    from benchmarks._results import write_json
    from benchmarks._shapes import random_model
    from benchmarks._workload import SCORINGS, build


LAYOUTS = ("packed", "unpacked", "block", "graphs")


def variant(master, dtype: str, attn: str):
    """The master's weights cast to `dtype`, in a model built with attention `attn` (same config, same device)."""
    from transformers import AutoModelForCausalLM

    with torch.device(master.device):
        model = AutoModelForCausalLM.from_config(master.model.config, dtype=getattr(torch, dtype),
                                                 attn_implementation=attn)
    model.load_state_dict(master.model.state_dict())
    return wrap(model.eval(), master.tokenizer, name=f"{master.name}-{dtype}-{attn}")


def per_prompt(arrays, n_options: int, method: str):
    """Letters: one array per prompt. Options: each prompt's summed option log-likelihoods (build() orders them
    shuffle-major, `n_options` per prompt)."""
    if method == "first_token":
        return list(arrays)
    sums = np.array([float(np.sum(x)) for x in arrays])
    return np.split(sums, len(sums) // n_options)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--random-shape", action="append", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtypes", default="bfloat16,float16")
    ap.add_argument("--attns", default="sdpa,eager")
    ap.add_argument("--formats-dir", default=None)
    ap.add_argument("--items", type=int, default=2)
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--shuffles", type=int, default=4)
    ap.add_argument("--style", default="enem")
    ap.add_argument("--padded-batch", type=int, default=4)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    pool, evaluated, args.shot_ids, _ = enem_long(args.formats_dir, args.shots)
    args.rule, evaluated = "ids", evaluated[: args.items]
    rows = []
    for shape in args.random_shape:
        master = random_model(shape, args.tokenizer, device=args.device, dtype="float32")
        work = {m: build(master, evaluated, pool, args, m) for m in SCORINGS.values()}
        ref = {m: [naive_scores(master, reqs) for reqs, _ in w] for m, w in work.items()}
        facts = device_facts(master)
        for dtype in args.dtypes.split(","):
            for attn in args.attns.split(","):
                lm = variant(master, dtype, attn)
                for method, items in work.items():
                    naive = [naive_scores(lm, reqs) for reqs, _ in items]
                    padded = [naive_padded_scores(lm, reqs, args.padded_batch) for reqs, _ in items]
                    noise = max(max_delta(a, b) for a, b in zip(naive, padded, strict=True))
                    naive_err = max(max_delta(a, b) for a, b in zip(naive, ref[method], strict=True))
                    for layout in LAYOUTS:
                        t0 = time.perf_counter()
                        if layout in ("packed", "unpacked"):
                            got = [PrefixScorer(lm, pack=layout == "packed").score(reqs, shared)
                                   for reqs, shared in items]
                        else:
                            got = PrefixScorer(lm, graphs=layout == "graphs").score_block(items)
                        seconds = time.perf_counter() - t0
                        finite = all(np.isfinite(x).all() for g in got for x in g)
                        same = n = 0
                        for it, g, nv in zip(evaluated, got, naive, strict=True):
                            s, k = choice_agreement(per_prompt(nv, it.n_options, method),
                                                    per_prompt(g, it.n_options, method), noise)
                            same, n = same + s, n + k
                        row = dict(shape=shape, dtype=dtype, attn=attn, scoring=method, layout=layout,
                                   engine_vs_naive=max(max_delta(a, b) for a, b in zip(got, naive, strict=True)),
                                   naive_noise=noise,
                                   engine_err=max(max_delta(a, b) for a, b in zip(got, ref[method], strict=True)),
                                   naive_err=naive_err, same_choices=same, compared=n, finite=finite,
                                   seconds=round(seconds, 3), device=facts["device"])
                        rows.append(row)
                        print(" ".join(f"{k}={v:.2e}" if isinstance(v, float) and k != "seconds" else f"{k}={v}"
                                       for k, v in row.items()), flush=True)
                del lm
                torch.cuda.empty_cache() if args.device.startswith("cuda") else None
        del master
    parts = []
    for d in args.dtypes.split(","):
        mine = [r for r in rows if r["dtype"] == d]
        top = {k: max(r[k] for r in mine) for k in ("engine_vs_naive", "naive_noise", "engine_err", "naive_err")}
        parts.append(f"{d}: max engine_vs_naive {top['engine_vs_naive']:.2e}, "
                     f"max naive_noise {top['naive_noise']:.2e}, "
                     f"max engine_err {top['engine_err']:.2e} vs naive_err {top['naive_err']:.2e}, same choices "
                     f"{sum(r['same_choices'] for r in mine)}/{sum(r['compared'] for r in mine)}")
    print("RESULT per dtype: " + "; ".join(parts))
    write_json(args.json, {"args": vars(args), "device": facts, "rows": rows}, args.device)


if __name__ == "__main__":
    main()
