"""The scoring benchmarks' shared workload: arguments, model + items, rendered prompts and engine Requests.

Used by `scoring_throughput.py` (naive vs KV-prefix) and `vs_lm_eval.py` (lm-evaluation-harness vs KV-prefix)
so both score exactly the same prompts: the ENEM-paper protocol (style `enem`), k shots excluded from
evaluation, N seeded option shuffles per item. Two workloads:
  enem-long  real-length ENEM prompts (see _enem_long.py): the paper's fixed 4-shot block of real ENEM
             records plus our own passages, real 2022 natural-science items then our passages as targets;
  exam       any exam the loaders read: `--dataset demo` (default) or e.g. `--dataset enem --data-path FILE [FILE
             ...] --item-params ITENS_PROVA.csv` (several paths are loaded and joined: e.g. the four areas of one
             real exam), shots drawn from the loaded items by `--shot-rule` (the strategies' usual `easiest`:
             lowest IRT b per subject, target's subject first); `--per-subject N` evaluates the first N items of
             each subject in the prompt's language (e.g. 3 per area of a real ENEM).
Scorings: letters (first-token log-prob of each option letter) and options (log-likelihood of each option's
text), `--scorings letters|options|both`.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from mcqa_toolkit.backends.hf import load_model
from mcqa_toolkit.backends.hf.engine import Request
from mcqa_toolkit.backends.hf.segments import TokenCache
from mcqa_toolkit.backends.hf.tokens import context_continuations, letter_requests, prompt_text, shared_prefix_ids
from mcqa_toolkit.datasets import load
from mcqa_toolkit.items import ItemSet
from mcqa_toolkit.prompts import load_template, render, select_shots, split_shots
from mcqa_toolkit.prompts.permutations import permutations

try:  # run as a script (python benchmarks/x.py) or as a module (python -m benchmarks.x)
    from _enem_long import enem_long
    from _shapes import random_model
except ModuleNotFoundError:
    from benchmarks._enem_long import enem_long
    from benchmarks._shapes import random_model

SCORINGS = {"letters": "first_token", "options": "loglik"}  # scoring -> our build() method


def add_arguments(ap: argparse.ArgumentParser, *, items: int, shuffles: int) -> None:
    """The workload options (model, workload/dataset, prompt style, items, shots, shuffles, scorings, threads)."""
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--random-shape", default=None, help="instead of --model: random weights of a published shape "
                    "(_shapes.py: gemma-3-1b, llama-3-8b, qwen2.5-7b), built on --device with --tokenizer")
    ap.add_argument("--tokenizer", default=None, help="--random-shape: a saved tokenizer directory")
    ap.add_argument("--attn", default="sdpa", help="--random-shape: attention implementation (sdpa, eager)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", help="float32 (equality is checked at 1e-4), bfloat16, float16")
    ap.add_argument("--workload", choices=("enem-long", "exam"), default="enem-long")
    ap.add_argument("--formats-dir", default=None, help="enem-long: real ENEM records (default ../shared/formats)")
    ap.add_argument("--dataset", default="demo", help="exam: a loader name (demo, enem, mmlu, ...)")
    ap.add_argument("--data-path", default=None, nargs="+", help="exam: the loader's path(s) (files or directories)")
    ap.add_argument("--per-subject", type=int, default=0, help="exam: the first N items of each subject (0: all)")
    ap.add_argument("--item-params", default=None, help="exam, enem: INEP ITENS_PROVA csv (IRT b for `easiest`)")
    ap.add_argument("--language", default="pt")
    ap.add_argument("--shot-rule", default="easiest", choices=("easiest", "random"), help="exam: shot rule")
    ap.add_argument("--style", default="enem")
    ap.add_argument("--items", type=int, default=items)
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--shuffles", type=int, default=shuffles)
    ap.add_argument("--scorings", choices=("letters", "options", "both"), default="letters")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    ap.add_argument("--budget", default=None, help="engine budget of a device type (engine.BUDGETS: cpu, cuda); "
                    "default: the model's device's")
    ap.add_argument("--items-per-call", type=int, default=None, help="items per engine call (default: the budget's)")
    ap.add_argument("--max-batch-tokens", type=int, default=None, help="slots per forward call (default: the budget's)")
    ap.add_argument("--max-batch-rows", type=int, default=None, help="rows per forward call (default: the budget's)")
    ap.add_argument("--fused", action="store_true", help="the engine's fused body (backends/hf/fused.py)")


def engine_options(args: argparse.Namespace) -> dict[str, Any]:
    """PrefixScorer options from --budget / --items-per-call / --max-batch-tokens / --max-batch-rows (unset: the
    device's budget) and --fused."""
    from mcqa_toolkit.backends.hf.engine import BUDGETS

    out: dict[str, Any] = {"fused": True} if getattr(args, "fused", False) else {}
    if args.budget:
        b = BUDGETS[args.budget]
        out |= {"max_batch_tokens": b.max_batch_tokens, "max_batch_rows": b.max_batch_rows,
               "items_per_call": b.items_per_call, "attention": b.attention, "linear": b.linear}
    for key in ("items_per_call", "max_batch_tokens", "max_batch_rows"):
        if getattr(args, key) is not None:
            out[key] = getattr(args, key)
    return out


def blocks(seq: Sequence, size: int) -> list:
    """`seq` cut into consecutive blocks of `size` (the runner's blocks of items)."""
    return [seq[i:i + size] for i in range(0, len(seq), size)]


def scorings(args: argparse.Namespace) -> list[str]:
    return list(SCORINGS) if args.scorings == "both" else [args.scorings]


def _load_exam(args: argparse.Namespace):
    if args.dataset == "demo":
        return load("demo", language=args.language)
    kwargs: dict[str, Any] = {}
    if args.dataset == "enem":
        kwargs["language"] = args.language
        if args.item_params:
            kwargs["item_params"] = args.item_params
    paths = args.data_path or [None]
    sets = [load(args.dataset, **kwargs, **({"path": p} if p else {})) for p in paths]
    return sets[0] if len(sets) == 1 else ItemSet([it for s in sets for it in s], f"{args.dataset}:joined")


def _per_subject(items: Any, n: int, language: str) -> ItemSet:
    """The first `n` items of each subject (in order of first appearance) in `language`, subject after subject."""
    by: dict[str, list] = {}
    for it in items:
        if it.language == language and len(by.setdefault(it.subject, [])) < n:
            by[it.subject].append(it)
    return ItemSet([it for group in by.values() for it in group], getattr(items, "name", ""))


def workload_items(args: argparse.Namespace) -> tuple[Any, Any, str]:
    """(few-shot pool, evaluated items (all of them), a description of the source), without loading a model.

    Sets `args.rule` / `args.shot_ids` for `render_item`."""
    if args.workload == "enem-long":
        pool, evaluated, args.shot_ids, used = enem_long(args.formats_dir, args.shots)
        args.rule = "ids"
        real = used or "none found, our passages only"
        return pool, evaluated, f"enem-long (shots {args.shot_ids}; real files: {real})"
    items = _load_exam(args)
    args.rule, args.shot_ids = args.shot_rule, None
    pool, evaluated = split_shots(items, args.shots, args.rule) if args.shots else (items, items)
    if getattr(args, "per_subject", 0):
        evaluated = _per_subject(evaluated, args.per_subject, args.language)
    names = ",".join(Path(p).name for p in args.data_path) if args.data_path else args.language
    return pool, evaluated, f"{args.dataset}:{names}"


def setup(args: argparse.Namespace) -> tuple[Any, list, list]:
    """(lm, few-shot pool, evaluated items), after applying --threads and one warm-up forward; prints the
    workload header.

    Sets `args.rule` / `args.shot_ids` for `render_item`."""
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.random_shape:
        lm = random_model(args.random_shape, args.tokenizer, device=args.device, dtype=args.dtype, attn=args.attn)
    else:
        lm = load_model(args.model, device=args.device, dtype=args.dtype)
    pool, evaluated, source = workload_items(args)
    evaluated = evaluated[: args.items]
    print(f"model={lm.name} {lm.dtype} on {lm.device} ({type(lm.model).__name__}, attention "
          f"{lm.model.config._attn_implementation}) workload={source} items={len(evaluated)} shots={args.shots} "
          f"rule={args.rule} shuffles={args.shuffles} style={args.style} torch_threads={torch.get_num_threads()}")
    with torch.inference_mode():  # warm-up, so no timed path pays first-call allocation costs
        lm.model(input_ids=torch.tensor([lm.tokenizer("aquecimento").input_ids], device=lm.device))
    return lm, pool, evaluated


def render_item(item: Any, pool: Sequence, args: argparse.Namespace) -> list:
    """The item's Prompts, one per shuffle (shuffle 0 = original order), after its shots."""
    template = load_template(item.language, args.style)
    shots = select_shots(pool, item, args.shots, args.rule, ids=args.shot_ids) if args.shots else []
    return [render(item, template, shots=shots, permutation=p, shuffle=k)
            for k, p in enumerate(permutations(item.n_options, args.shuffles, seed=0, key=item.parallel_id))]


def build(lm: Any, items: Sequence, pool: Sequence, args: argparse.Namespace, method: str,
          cache: TokenCache | None = None) -> list[tuple[list[Request], tuple[int, ...]]]:
    """Per item: its requests and the shared-prefix ids (both methods use the same rendered prompts).

    first_token: one Request per shuffle (candidates = the letter tokens, in shown order);
    loglik: one Request per (shuffle, shown option), shuffle-major, split the lm-evaluation-harness way.
    Tokenised by the same helpers HFBackend uses (backends.hf.tokens), through `cache` (a run's TokenCache, as
    the backend keeps one) when given, so the timing includes what a run pays.
    """
    out = []
    for it in items:
        prompts = render_item(it, pool, args)
        shared = shared_prefix_ids(lm, prompts[0], cache=cache)
        if method == "first_token":
            reqs = [Request(ids, len(ids), cands) for ids, cands, _ in letter_requests(lm, prompts, cache)]
        else:
            texts = [prompt_text(lm, p) for p in prompts]
            pairs = context_continuations(lm, [(t, c) for (t, _), p in zip(texts, prompts, strict=True)
                                               for c in p.continuations],
                                          texts[0][1], cache)
            reqs = [Request(ctx + c, len(ctx)) for ctx, c in pairs]
        out.append((reqs, shared))
    return out
