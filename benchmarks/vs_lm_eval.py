"""Our KV-prefix engine vs lm-evaluation-harness's HF backend, on the same in-memory model and the same prompts.

The workload is scoring_throughput.py's (see _workload.py): ENEM-paper prompts (style `enem`), k `easiest`
shots, N option shuffles per item, on the demo exam or any dataset given. Two scorings of every prompt:
  letters  log-likelihood of each option letter as the continuation of the prompt (the ENEM paper's
           letter scoring; ours = first-token log-prob of the letter token, lm-eval = `loglikelihood`
           of (prompt, letter), which it computes from one forward per prompt via its one-token logits cache);
  options  log-likelihood (sum) of each option's text as the continuation of the prompt.
lm-eval gets `HFLM(pretrained=<the loaded model object>, tokenizer=<its tokenizer>, batch_size=...)` and
`Instance("loglikelihood", ...)` requests, one `loglikelihood` call per item; ours is `PrefixScorer.score`
per item, timed including our request building (rendering + tokenisation). Items are interleaved (lm-eval
then ours, per item and scoring) so load from other processes hits both alike. Printed: whether the token
ids agree (lm-eval's `_encode_pair`: trailing context spaces move to the continuation, the whole string
is encoded and split at the context's length, as our `context_continuation`), per-item seconds, the max
|delta| of per-option log-likelihoods, identical argmax choices per item x shuffle, wall time, items/s and
our speed ratio (lm-eval seconds / ours). RESULT's speed-up is the letter scoring's (the issue's target
workload); max_delta and same_choices cover both scorings.

lm-eval forwards every request alone with full-vocabulary logits (Gemma 3: 262k entries per position), so
it is slow on CPU: the defaults (4 items x 3 shuffles) take a few minutes; raise --items / --shuffles at will.
Nothing is downloaded: HF_HUB_OFFLINE defaults to 1 here (set HF_HUB_OFFLINE=0 to let --model fetch a Hub id).

    pip install -e ".[bench]"          # lm-eval>=0.4.5,<0.5
    python benchmarks/vs_lm_eval.py [--items 4] [--shuffles 3] [--shots 4] [--lm-eval-batch-size 1]
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers / huggingface_hub read it

import numpy as np  # noqa: E402
import torch  # noqa: E402

from mcqa_toolkit.backends.hf.tokens import prompt_text  # noqa: E402
from mcqa_toolkit.backends.hf.engine import PrefixScorer  # noqa: E402

try:  # run as a script (python benchmarks/vs_lm_eval.py) or as a module (python -m benchmarks.vs_lm_eval)
    from _workload import add_arguments, build, render_item, setup
except ModuleNotFoundError:
    from benchmarks._workload import add_arguments, build, render_item, setup

SCORINGS = {"letters": "first_token", "options": "loglik"}  # our build() method per scoring


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


def per_prompt(values, sizes):
    """Split a flat list (one value per option, shuffle-major) into per-prompt float arrays."""
    out, k = [], 0
    for n in sizes:
        out.append(np.asarray(values[k:k + n], dtype=float))
        k += n
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, items=4, shuffles=3)
    ap.add_argument("--lm-eval-batch-size", type=int, default=1, help="HFLM batch_size (its default: 1)")
    args = ap.parse_args()
    version, HFLM, Instance = import_lm_eval()
    lm, pool, evaluated = setup(args)
    hflm = HFLM(pretrained=lm.model, tokenizer=lm.tokenizer, batch_size=args.lm_eval_batch_size)
    print(f"lm-eval {version} HFLM(pretrained=<in-memory {type(lm.model).__name__}>, batch_size="
          f"{args.lm_eval_batch_size}) backend={hflm.backend} logits_cache={hflm.logits_cache} "
          f"max_length={hflm.max_length} | ours: PrefixScorer")
    with torch.inference_mode():  # warm-up, so neither side pays first-call allocation costs
        lm.model(input_ids=torch.tensor([lm.tokenizer("aquecimento").input_ids], device=lm.device))

    scorers = {s: PrefixScorer(lm) for s in SCORINGS}
    acc = {s: {"t_lm": 0.0, "t_ours": 0.0, "delta": 0.0, "same": 0, "prompts": 0, "requests": 0,
               "tok_same": 0, "tok_all": 0, "first_diff": None} for s in SCORINGS}
    for it in evaluated:
        prompts = render_item(it, pool, args)
        line = [f"item {it.item_id}:"]
        for scoring, method in SCORINGS.items():
            a = acc[scoring]
            pairs = lm_eval_pairs(lm, prompts, scoring)
            instances = [Instance(request_type="loglikelihood", doc={}, arguments=pr, idx=i)
                         for i, pr in enumerate(pairs)]
            t0 = time.perf_counter()
            theirs = [ll for ll, _greedy in hflm.loglikelihood(instances, disable_tqdm=True)]
            t_lm = time.perf_counter() - t0
            t0 = time.perf_counter()
            (reqs, shared), = build(lm, [it], pool, args, method)
            ours = scorers[scoring].score(reqs, shared)
            t_ours = time.perf_counter() - t0
            # token ids: lm-eval's split of every (context, continuation) vs what our engine scored (untimed)
            for (ctx, cont), mine in zip(pairs, our_pairs(reqs, scoring)):
                same_ids = list(hflm._encode_pair(ctx, cont)) == list(mine)
                a["tok_same"] += same_ids
                a["tok_all"] += 1
                if not same_ids and a["first_diff"] is None:
                    a["first_diff"] = (it.item_id, cont, hflm._encode_pair(ctx, cont)[1], mine[1])
            sizes = [len(p.letter_continuations if scoring == "letters" else p.continuations) for p in prompts]
            ours_flat = ([float(x) for arr in ours for x in arr] if scoring == "letters"
                         else [float(arr.sum()) for arr in ours])
            for mine, other in zip(per_prompt(ours_flat, sizes), per_prompt(theirs, sizes)):
                a["delta"] = max(a["delta"], float(np.abs(mine - other).max()))
                a["same"] += int(np.argmax(mine)) == int(np.argmax(other))
                a["prompts"] += 1
            a["t_lm"] += t_lm
            a["t_ours"] += t_ours
            a["requests"] += len(pairs)
            line.append(f"{scoring} lm-eval {t_lm:.2f}s ours {t_ours:.3f}s ({t_lm / t_ours:.1f}x)")
        print(" ".join(line[:2]) + " | " + line[2], flush=True)

    n = len(evaluated)
    for scoring, a in acc.items():
        r_lm, r_ours = n / a["t_lm"], n / a["t_ours"]
        a["speedup"] = r_ours / r_lm
        print(f"[{scoring}] requests={a['requests']} token_ids_identical={a['tok_same']}/{a['tok_all']} | "
              f"lm-eval {a['t_lm']:.1f}s ({r_lm:.3f} items/s) ours {a['t_ours']:.2f}s ({r_ours:.2f} items/s) | "
              f"speedup {a['speedup']:.1f}x max_delta {a['delta']:.2e} same_choices={a['same']}/{a['prompts']}")
        if a["first_diff"]:
            iid, cont, theirs_ids, mine_ids = a["first_diff"]
            print(f"  first token-id difference: item {iid} continuation {cont!r}: lm-eval {theirs_ids} "
                  f"ours {mine_ids}")
    t_lm, t_ours = sum(a["t_lm"] for a in acc.values()), sum(a["t_ours"] for a in acc.values())
    print(f"[both] lm-eval {t_lm:.1f}s ours {t_ours:.2f}s speedup {t_lm / t_ours:.1f}x")
    same = all(a["same"] == a["prompts"] for a in acc.values())
    print(f"RESULT speedup_vs_lm_eval={acc['letters']['speedup']:.1f} "
          f"max_delta={max(a['delta'] for a in acc.values()):.2e} same_choices={same}")


if __name__ == "__main__":
    main()
