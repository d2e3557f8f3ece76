"""The scoring benchmarks' shared workload: arguments, model + items, rendered prompts and engine Requests.

Used by `scoring_throughput.py` (naive vs KV-prefix) and `vs_lm_eval.py` (lm-evaluation-harness vs KV-prefix)
so both score exactly the same prompts: the ENEM-paper protocol on the demo exam (or any dataset given),
k shots chosen by the `easiest` rule (excluded from evaluation), N seeded option shuffles per item.
"""
from __future__ import annotations

import argparse
from typing import Any, Sequence

import torch

from mcqa_toolkit.datasets import load
from mcqa_toolkit.backends.hf import load_model
from mcqa_toolkit.backends.hf.engine import Request
from mcqa_toolkit.backends.hf.tokens import (context_continuation, encode, next_token_candidates, prompt_text,
                                             shared_prefix_ids)
from mcqa_toolkit.prompts import load_template, render, select_shots, split_shots
from mcqa_toolkit.prompts.permutations import permutations


def add_arguments(ap: argparse.ArgumentParser, *, items: int, shuffles: int) -> None:
    """The workload options (model, dataset, prompt style, items, shots, shuffles, threads)."""
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--dataset", default="demo")
    ap.add_argument("--language", default="pt")
    ap.add_argument("--style", default="enem")
    ap.add_argument("--items", type=int, default=items)
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--shuffles", type=int, default=shuffles)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")


def setup(args: argparse.Namespace) -> tuple[Any, list, list]:
    """(lm, few-shot pool, evaluated items), after applying --threads; prints the workload header."""
    if args.threads:
        torch.set_num_threads(args.threads)
    lm = load_model(args.model, device="cpu", dtype="float32")
    items = load(args.dataset, language=args.language) if args.dataset == "demo" else load(args.dataset)
    pool, evaluated = split_shots(items, args.shots, "easiest") if args.shots else (items, items)
    evaluated = evaluated[: args.items]
    print(f"model={lm.name} dataset={args.dataset}:{args.language} items={len(evaluated)} shots={args.shots} "
          f"shuffles={args.shuffles} style={args.style} torch_threads={torch.get_num_threads()}")
    return lm, pool, evaluated


def render_item(item: Any, pool: Sequence, args: argparse.Namespace) -> list:
    """The item's Prompts, one per shuffle (shuffle 0 = original order), after its `easiest` shots."""
    template = load_template(item.language, args.style)
    shots = select_shots(pool, item, args.shots, "easiest") if args.shots else []
    return [render(item, template, shots=shots, permutation=p, shuffle=k)
            for k, p in enumerate(permutations(item.n_options, args.shuffles, seed=0, key=item.parallel_id))]


def build(lm: Any, items: Sequence, pool: Sequence, args: argparse.Namespace, method: str
          ) -> list[tuple[list[Request], tuple[int, ...]]]:
    """Per item: its requests and the shared-prefix ids (both methods use the same rendered prompts).

    first_token: one Request per shuffle (candidates = the letter tokens, in shown order);
    loglik: one Request per (shuffle, shown option), shuffle-major, split the lm-evaluation-harness way.
    """
    out = []
    for it in items:
        prompts = render_item(it, pool, args)
        shared = shared_prefix_ids(lm, prompts[0])
        reqs = []
        for p in prompts:
            text, special = prompt_text(lm, p)
            if method == "first_token":
                ids = encode(lm, text, special)
                cands, _ = next_token_candidates(lm, ids, text, p.letter_continuations, special)
                reqs.append(Request(ids, len(ids), cands))
            else:
                for cont in p.continuations:
                    ctx, c = context_continuation(lm, text, cont, special)
                    reqs.append(Request(ctx + c, len(ctx)))
        out.append((reqs, shared))
    return out
