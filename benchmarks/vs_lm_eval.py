"""Our KV-prefix engine vs lm-evaluation-harness's HF backend vs naive forwards, with the references of
_reference.py beside them, on the same in-memory model and the same prompts, in one run.

The workload is scoring_throughput.py's (see _workload.py): by default `enem-long`, real-length ENEM prompts
(the ENEM paper's 4-shot block, ~1,500 tokens) with N option shuffles per item; `--workload exam --dataset ...`
takes any exam the loaders read. Scorings (`--scorings letters|options|both`):
  letters  log-likelihood of each option letter as the continuation of the prompt (the ENEM paper's
           letter scoring; ours = first-token log-prob of the letter token, lm-eval = `loglikelihood`
           of (prompt, letter), which it computes from one forward per prompt via its one-token logits cache);
  options  log-likelihood (sum) of each option's text as the continuation of the prompt.
lm-eval gets `HFLM(pretrained=<the loaded model object>, tokenizer=<its tokenizer>, batch_size=...)` and
`Instance("loglikelihood", ...)` requests, one `loglikelihood` call per item; ours scores blocks of the engine's
`items_per_call` items for the device (engine.BUDGETS; `--budget`, `--items-per-call` to choose), one call per
block, whose time is shared equally by its items. lm-eval costs ~4 minutes per item
at this length (30 shuffles, letters), so it runs on the first `--lm-eval-items` items only (default 1); the
naive path (every sequence forwarded alone with full-vocabulary logits: engine.naive_scores) on the first
`--naive-items` (default 1); ours on all `--items` (default 8), timed including rendering and tokenisation,
the run prefix (few-shot block) encoded inside the first item as in a real run. Items are interleaved
(lm-eval, naive, ours per item) so load from other processes hits all alike. Speed-ups are seconds per item
(theirs / ours, both on the same items: the first `--lm-eval-items` for lm-eval, the first `--naive-items` for
naive; ours over all items is printed beside them, since the first item also pays the run prefix). Printed per
scoring: token ids identical (lm-eval's `_encode_pair` vs ours), max |delta| and identical argmax choices
against lm-eval and against naive, tokens forwarded / unique, and the engine against the references of
_reference.py (the body's plain forward on full-length and on 256-token rows, the device's GEMM rate, on a GPU the
datasheet MFU).
Defaults take ~12-15 minutes on 2 CPU cores (lm-eval and naive take ~5 minutes per item each there).
Nothing is downloaded: HF_HUB_OFFLINE defaults to 1 here (set HF_HUB_OFFLINE=0 to let --model fetch a Hub id).

    pip install -e ".[bench]"          # lm-eval>=0.4.5,<0.5
    python benchmarks/vs_lm_eval.py [--items 8] [--lm-eval-items 1] [--naive-items 1] [--scorings letters]
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers / huggingface_hub read it

import numpy as np  # noqa: E402

from mcqa_toolkit.backends.hf.engine import PrefixScorer, naive_scores  # noqa: E402
from mcqa_toolkit.backends.hf.segments import TokenCache  # noqa: E402
from mcqa_toolkit.backends.hf.tokens import prompt_text  # noqa: E402

try:  # run as a script (python benchmarks/vs_lm_eval.py) or as a module (python -m benchmarks.vs_lm_eval)
    from _reference import device_facts, engine_references, gemm_rate, references_line
    from _results import write_json
    from _workload import SCORINGS, add_arguments, blocks, build, engine_options, render_item, scorings, setup
except ModuleNotFoundError:
    from benchmarks._reference import device_facts, engine_references, gemm_rate, references_line
    from benchmarks._results import write_json
    from benchmarks._workload import (
        SCORINGS,
        add_arguments,
        blocks,
        build,
        engine_options,
        render_item,
        scorings,
        setup,
    )


def import_lm_eval():
    try:
        import lm_eval
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError as e:
        print(f"vs_lm_eval needs lm-evaluation-harness ({e}). Install the `bench` extra:\n"
              f'    pip install -e ".[bench]"      (from the repository)\n'
              f'    pip install "mcqa_toolkit[bench]"   (or: pip install "lm-eval>=0.4.5,<0.5")', file=sys.stderr)
        sys.exit(2)
    logging.getLogger("lm_eval").setLevel(logging.ERROR)  # its "pretrained is not a str" warnings are expected
    return lm_eval.__version__, HFLM, Instance


def lm_eval_pairs(lm, prompts, scoring):
    """(context, continuation) strings per request, in the order of our build(): shuffle-major, shown order."""
    out = []
    for p in prompts:
        text, _ = prompt_text(lm, p)
        conts = p.letter_continuations if scoring == "letters" else p.continuations
        out.extend((text, c) for c in conts)
    return out


def our_pairs(reqs, scoring):
    """The (context ids, continuation ids) our engine scores, comparable with lm-eval's `_encode_pair`."""
    if scoring == "letters":
        return [(list(r.tokens), [c]) for r in reqs for c in r.candidates]
    return [(list(r.tokens[: r.n_context]), list(r.tokens[r.n_context:])) for r in reqs]


def by_prompt(arrays, sizes, scoring):
    """Per prompt, one float per shown option: our letter log-probs as they are (one array per prompt), option
    log-likelihoods summed (one array per option, `sizes[k]` options in prompt k)."""
    if scoring == "letters":
        return [np.asarray(x, dtype=float) for x in arrays]
    return np.split(np.array([float(np.sum(x)) for x in arrays]), np.cumsum(sizes)[:-1])


def compare(mine, other, acc, key):
    for a, b in zip(mine, other, strict=True):
        acc[f"delta_{key}"] = max(acc[f"delta_{key}"], float(np.abs(a - b).max()))
        acc[f"same_{key}"] += int(np.argmax(a)) == int(np.argmax(b))
        acc[f"n_{key}"] += 1


def run_scoring(lm, hflm, Instance, pool, evaluated, args, scoring):
    """Interleaved per block of items: lm-eval (first items), naive (first items), ours (all, one engine call per
    block of the engine's `items_per_call` items, its time shared equally by them); returns the accumulators."""
    scorer = PrefixScorer(lm, **engine_options(args))
    cache = TokenCache(lm.tokenizer)  # a run's, as HFBackend keeps one
    a = {k: 0.0 for k in ("t_lm", "t_naive", "t_ours", "t_ours_lm_items", "t_ours_naive_items", "delta_lm",
                          "delta_naive")}
    a.update({k: 0 for k in ("same_lm", "n_lm", "same_naive", "n_naive", "tok_same", "tok_all", "n_items_lm",
                             "n_items_naive", "tokens_len", "n_seqs")})
    a["ours_block_seconds"] = []  # per block in order: the first one also pays the run prefix
    i = 0
    for block in blocks(list(evaluated), scorer.items_per_call):
        lines, theirs = [], {}
        for k, it in enumerate(block):
            lines.append([f"[{scoring}] item {it.item_id}:"])
            if i + k < args.lm_eval_items:
                prompts = render_item(it, pool, args)
                sizes = [len(p.letter_continuations if scoring == "letters" else p.continuations) for p in prompts]
                pairs = lm_eval_pairs(lm, prompts, scoring)
                inst = [Instance(request_type="loglikelihood", doc={}, arguments=pr, idx=j)
                        for j, pr in enumerate(pairs)]
                t0 = time.perf_counter()
                flat = [ll for ll, _greedy in hflm.loglikelihood(inst, disable_tqdm=True)]
                dt = time.perf_counter() - t0
                a["t_lm"] += dt
                a["n_items_lm"] += 1
                theirs[k] = (pairs, np.split(np.asarray(flat, dtype=float), np.cumsum(sizes)[:-1]))
                lines[-1].append(f"lm-eval {dt:.1f}s")
        t0 = time.perf_counter()
        built = build(lm, block, pool, args, SCORINGS[scoring], cache)
        a.setdefault("run_prefix_tokens", len(built[0][1]))  # what the first block pays on top of its items
        results = scorer.score_block(built)
        dt_ours = (time.perf_counter() - t0) / len(block)
        a["t_ours"] += dt_ours * len(block)
        a["ours_block_seconds"].append(dt_ours * len(block))
        for k, (it, (reqs, _), ours) in enumerate(zip(block, built, results, strict=True)):
            prompts = render_item(it, pool, args)  # untimed: each prompt's number of options
            sizes = [len(p.letter_continuations if scoring == "letters" else p.continuations) for p in prompts]
            a["tokens_len"] += sum(len(r.tokens) for r in reqs)
            a["n_seqs"] += len(reqs)
            mine = by_prompt(ours, sizes, scoring)
            if k in theirs:
                pairs, other = theirs[k]
                a["t_ours_lm_items"] += dt_ours
                compare(mine, other, a, "lm")
                for (ctx, cont), ids in zip(pairs, our_pairs(reqs, scoring), strict=True):  # token ids, untimed
                    a["tok_same"] += list(hflm._encode_pair(ctx, cont)) == list(ids)
                    a["tok_all"] += 1
            if i + k < args.naive_items:
                t0 = time.perf_counter()
                ref = naive_scores(lm, reqs)
                dt = time.perf_counter() - t0
                a["t_naive"] += dt
                a["t_ours_naive_items"] += dt_ours
                a["n_items_naive"] += 1
                compare(mine, by_prompt(ref, sizes, scoring), a, "naive")
                lines[k].append(f"naive {dt:.1f}s")
            lines[k].append(f"ours {dt_ours:.2f}s" + (f" (block of {len(block)})" if len(block) > 1 else ""))
            print(" ".join(lines[k]), flush=True)
        i += len(block)
    a["stats"], a["linear"] = scorer.stats, scorer.linear
    return a


def _x(ratio: float | None) -> str:
    """A speed-up for printing ("null": nothing was compared)."""
    return "null" if ratio is None else f"{ratio:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=8, shuffles=30)
    ap.add_argument("--lm-eval-items", type=int, default=1)
    ap.add_argument("--naive-items", type=int, default=1)
    ap.add_argument("--lm-eval-batch-size", type=int, default=1, help="HFLM batch_size (its default: 1)")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls of each body reference")
    ap.add_argument("--json", default=None, help="also write the results (and the device, versions) to this file")
    args = ap.parse_args()
    version, HFLM, Instance = import_lm_eval()
    lm, pool, evaluated = setup(args)
    facts = device_facts(lm, lm_eval=version)
    gemm = gemm_rate(lm.device, lm.dtype)
    print("device: " + " ".join(f"{k}={v}" for k, v in facts.items()))
    hflm = HFLM(pretrained=lm.model, tokenizer=lm.tokenizer, batch_size=args.lm_eval_batch_size)
    print(f"lm-eval {version} HFLM(pretrained=<in-memory {type(lm.model).__name__}>, batch_size="
          f"{args.lm_eval_batch_size}) backend={hflm.backend} logits_cache={hflm.logits_cache} "
          f"max_length={hflm.max_length} | ours: PrefixScorer | lm-eval on {min(args.lm_eval_items, len(evaluated))} "
          f"item(s), naive on {min(args.naive_items, len(evaluated))}, ours on {len(evaluated)}")

    res = {}
    for scoring in scorings(args):
        a = res[scoring] = run_scoring(lm, hflm, Instance, pool, evaluated, args, scoring)
        st = a["stats"]
        s_ours = a["t_ours"] / len(evaluated)
        s_lm = a["t_lm"] / max(a["n_items_lm"], 1)
        s_naive = a["t_naive"] / max(a["n_items_naive"], 1)
        # headline ratios on the same items: theirs and ours timed on the items both scored
        ours_lm_items = a["t_ours_lm_items"] / max(a["n_items_lm"], 1)
        ours_naive_items = a["t_ours_naive_items"] / max(a["n_items_naive"], 1)
        a["speedup_lm"] = s_lm / ours_lm_items if a["n_items_lm"] else None
        a["speedup_naive"] = s_naive / ours_naive_items if a["n_items_naive"] else None
        a["tokens_ratio"] = st.forwarded / st.unique
        a.update(engine_references(lm, st, a["t_ours"], a["tokens_len"] / a["n_seqs"], args.repeats, gemm,
                                   a["linear"]))
        print(f"[{scoring}] token_ids_identical={a['tok_same']}/{a['tok_all']} | lm-eval {s_lm:.1f} s/item "
              f"({a['n_items_lm']} items) naive {s_naive:.1f} s/item ({a['n_items_naive']}) ours {s_ours:.2f} s/item "
              f"({len(evaluated)} items; {ours_lm_items:.2f} s/item on the lm-eval items) | speedup vs lm-eval "
              f"{_x(a['speedup_lm'])}x vs naive {_x(a['speedup_naive'])}x | max_delta vs lm-eval "
              f"{a['delta_lm'] or 0:.2e} vs naive {a['delta_naive'] or 0:.2e} | same choices vs lm-eval "
              f"{a['same_lm']}/{a['n_lm']} vs naive {a['same_naive']}/{a['n_naive']}")
        print(f"[{scoring}] tokens forwarded={st.forwarded} unique={st.unique} padded={st.padded} "
              f"calls={st.calls} calls_per_item={st.calls / len(evaluated):.2f} naive={st.naive} "
              f"tokens_ratio={a['tokens_ratio']:.3f}", flush=True)
        print(f"[{scoring}] " + references_line(a), flush=True)
        a.update(s_ours=s_ours, s_lm=s_lm, s_naive=s_naive, stats=st.as_dict())
        for side in ("lm", "naive"):  # nothing compared: null, not a default
            if not a[f"n_{side}"]:
                a[f"delta_{side}"] = a[f"same_{side}"] = None
    head = res.get("letters") or next(iter(res.values()))
    same = all(a[f"same_{s}"] == a[f"n_{s}"] for a in res.values() for s in ("lm", "naive") if a[f"n_{s}"])
    deltas = [a[f"delta_{s}"] for a in res.values() for s in ("lm", "naive") if a[f"n_{s}"]]
    print(f"RESULT speedup_vs_lm_eval={_x(head['speedup_lm'])} speedup_vs_naive={_x(head['speedup_naive'])} "
          + (f"max_delta={max(deltas):.2e} same_choices={same} " if deltas else "") +
          f"tokens_ratio={head['tokens_ratio']:.3f} vs_body_short_rows={head['vs_body_short_rows']['vs_best']:.2f} "
          f"useful_vs_torch_mm={head['useful_vs_torch_mm']:.2f}" +
          (f" mfu={head['mfu']:.3f}" if head["mfu"] is not None else ""))
    if args.json:
        write_json(args.json, {"args": {k: ("JSON" if k == "json" and v else v) for k, v in vars(args).items()},
                               "device": facts, "gemm": gemm, "results": res}, lm.device, lm.tokenizer)


if __name__ == "__main__":
    main()
