"""The engine's support sweep: a small random model of each causal-LM family (model_families.py) scored by the engine
on each of its paths, against a plain transformers forward per sequence written here (not the project's
naive_scores), with letters, option log-likelihoods and greedy generation.

The workload: a run prefix longer than the families' sliding windows (model_families.WINDOW), three items on it
(a stem, three option orders each), letters (five candidates after a cue) and option continuations (four per order);
every item of a path's block in one `score_block` call as the runner brings them (`items_per_call`). Paths: the CPU
budget (tree attention, oneDNN linear, one item per call), the CUDA budget run on the CPU (dense masks, torch linear,
16 items per call) and unpacked rows, each with the engine's self-check off (what the path itself computes) and then
as a user gets it (the self-check on: the path it keeps, and the scores of that path). Generation: greedy through
HFBackend.generate (one prompt: on the run prefix's cache when the engine keeps it; two prompts: left-padded) against
transformers' generate on each prompt alone. `sweep(model_type)` returns one row of the raw file."""
from __future__ import annotations

import datetime
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from model_families import VOCAB, WINDOW, Unbuildable, build
from paths import REPO

EXACT = 1e-4  # the engine's equality bound in fp32 (README; tests/backends/hf/test_engine.py)
RUN_TOKENS = WINDOW + 16
PATHS = ("cpu", "cuda", "unpacked")
THREADS = 1  # torch threads per family (small models: two threads beside the other test worker's only wait)
CANDIDATES = (10, 11, 12, 13, 14)
CUE = (20, 21)


def workload(seed: int = 0) -> dict[str, Any]:
    """Token ids of the sweep's requests: the run prefix, and per item its letter prompts and option pairs."""
    rng = np.random.default_rng(seed)

    def ids(n: int) -> tuple[int, ...]:
        return tuple(int(x) for x in rng.integers(30, VOCAB, n))

    run = (1, *ids(RUN_TOKENS - 1))
    items = []
    for _ in range(3):
        stem = ids(8)
        orders = [ids(10) for _ in range(3)]
        options = [ids(3) for _ in range(4)]
        prompts = [run + stem + o + CUE for o in orders]
        items.append({"letters": prompts, "options": [(p, opt) for p in prompts for opt in options]})
    return {"run": run, "items": items}


def _requests(work: dict[str, Any], scoring: str) -> list[list[Any]]:
    from mcqa_toolkit.backends.hf.engine import Request

    if scoring == "letters":
        return [[Request(p, len(p), CANDIDATES) for p in it["letters"]] for it in work["items"]]
    return [[Request(p + o, len(p)) for p, o in it["options"]] for it in work["items"]]


def plain_logprobs(model: Any, requests: Sequence[Any]) -> list[np.ndarray]:
    """One full forward per sequence, no cache: the log-probs a request asks for, from its full logits."""
    import torch

    out = []
    with torch.inference_mode():
        for r in requests:
            logits = model(input_ids=torch.tensor([r.tokens]), use_cache=False).logits[0].float()
            logp = logits.log_softmax(-1)
            if r.candidates is not None:
                out.append(logp[len(r.tokens) - 1, list(r.candidates)].double().numpy())
            else:
                pos = torch.arange(r.n_context - 1, len(r.tokens) - 1)
                out.append(logp[pos, torch.tensor(r.tokens[r.n_context:])].double().numpy())
    return out


def engine_options(path: str) -> dict[str, Any]:
    """PrefixScorer options of a path on this CPU (the CUDA budget's fields, run here)."""
    from mcqa_toolkit.backends.hf.budget import BUDGETS

    if path == "cuda":
        b = BUDGETS["cuda"]
        return dict(max_batch_tokens=b.max_batch_tokens, max_batch_rows=b.max_batch_rows,
                    items_per_call=b.items_per_call, attention=b.attention, linear=b.linear)
    return {"pack": False} if path == "unpacked" else {}


def _scored(engine: Any, run: tuple[int, ...], items: list[list[Any]]) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    step = engine.items_per_call
    for lo in range(0, len(items), step):
        for values in engine.score_block([(reqs, run) for reqs in items[lo: lo + step]]):
            out += values
    return out


def _delta(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True))


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"


def measure_path(lm: Any, work: dict[str, Any], reference: dict[str, list[np.ndarray]], path: str,
                 check: bool, unchecked: dict[str, Any] | None = None) -> dict[str, Any]:
    """One path's max |delta| per scoring (or the error it ended in); with `check`, the path the self-check kept
    and the differences its probe found (`unchecked`: this path's row with the check off, reused when the check
    kept the path the engine takes without it: the same computation)."""
    from mcqa_toolkit.backends.hf.engine import PrefixScorer

    row: dict[str, Any] = {}
    try:
        engine = PrefixScorer(lm, check=check, **engine_options(path))
        if check:
            row["kept"] = engine.path
            row["probe"] = {k: v for k, v in engine.verdict.deltas.items()}
            if unchecked is not None and unchecked.get("path") == engine.path and "error" not in unchecked:
                return {**row, "letters": unchecked["letters"], "options": unchecked["options"]}
        for scoring in ("letters", "options"):
            flat = [r for reqs in _requests(work, scoring) for r in reqs]
            got = _scored(engine, work["run"], _requests(work, scoring))
            assert len(got) == len(flat)
            row[scoring] = _delta(got, reference[scoring])
        row["path" if not check else "kept"] = engine.path  # as it scored (a block may have stepped down)
    except Exception as e:  # noqa: BLE001 - the row records what the engine ended in
        row["error"] = _error(e)
    return row


@dataclass(frozen=True)
class TextPrompt:
    """A completion prompt as HFBackend.generate reads one: its text and the run-level prefix it declares."""

    text: str
    shared_prefix: str
    messages: None = None


def generation_prompts(tokenizer: Any, seed: int = 1) -> list[TextPrompt]:
    """Two prompts of different lengths on one run prefix of RUN_TOKENS tokens or more (longer than the sliding
    windows), in words of the tiny tokenizer's corpus (so that their texts encode as the tokenizer would encode any
    text)."""
    from tiny_models import CORPUS

    words = sorted({w for line in CORPUS for w in line.split()})
    rng = np.random.default_rng(seed)
    run = str(rng.choice(words))
    while len(tokenizer(run).input_ids) < RUN_TOKENS:
        run += " " + str(rng.choice(words))
    return [TextPrompt(f"{run} {' '.join(rng.choice(words, n))} Answer:", run) for n in (2, 5)]


def generation(lm: Any) -> dict[str, Any]:
    """Greedy tokens through HFBackend.generate (one prompt at a time: on the run prefix's cache when the engine
    keeps it; both at once: left-padded) against transformers' generate on each prompt alone: the same text?"""
    import torch

    from mcqa_toolkit.backends.hf import HFBackend
    from mcqa_toolkit.backends.hf.gencheck import cached_generation

    prompts = generation_prompts(lm.tokenizer)
    out: dict[str, Any] = {}
    try:
        plain = []
        for p in prompts:
            ids = lm.tokenizer(p.text, return_tensors="pt").input_ids
            with torch.inference_mode():
                g = lm.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=6,
                                      do_sample=False, pad_token_id=lm.tokenizer.pad_token_id)
            plain.append(lm.tokenizer.decode(g[0, ids.shape[1]:], skip_special_tokens=True))
    except Exception as e:  # noqa: BLE001 - transformers' own generate fails on the family: nothing to compare
        return {"plain_error": _error(e)}
    try:
        backend = HFBackend(lm)
        one = [backend.generate([p], max_new_tokens=6, stop=())[0].text for p in prompts]
        out["run_prefix_cache"] = backend.engine.prefix_cache and cached_generation(backend.engine)
        out["one_same"] = one == plain
        out["padded_same"] = [g.text for g in backend.generate(prompts, max_new_tokens=6, stop=())] == plain
    except Exception as e:  # noqa: BLE001
        out["error"] = _error(e)
    return out


def causal(model: Any) -> bool:
    """Whether a position's logits depend on the tokens before it only (a decoder), measured: changing the last
    token of a sequence leaves every earlier position's logits as they were. An encoder loaded as a causal LM
    (BERT's family without is_decoder) attends both ways, so no prefix of a prompt can be shared."""
    import torch

    ids = torch.tensor([list(range(30, 70))])
    other = ids.clone()
    other[0, -1] = 71
    with torch.inference_mode():
        a, b = (model(input_ids=x, use_cache=False).logits[0, :-1] for x in (ids, other))
    return bool(torch.allclose(a, b, atol=1e-5))


def kind(model: Any) -> str:
    """bidirectional (not `causal`), or attention, recurrent or hybrid: by the modules a model is made of (a
    recurrent state's mixer, convolution or linear-attention layer beside or instead of attention layers)."""
    if not causal(model):
        return "bidirectional"
    from transformers import DynamicCache

    names = {type(m).__name__.lower() for m in model.modules()}
    recurrent = any(k in n for n in names for k in ("mamba", "rwkv", "recurrent", "rglru", "deltanet", "lightning",
                                                     "linearattention", "shortconv", "mlstm", "xlstm", "ssm"))
    try:  # the cache transformers builds for the model: a layer of state beside or instead of keys and values
        layers = DynamicCache(config=model.config).layers
        recurrent = recurrent or any("Linear" in type(x).__name__ for x in layers)
    except Exception:  # noqa: BLE001 - a configuration the generic cache does not know: the modules decide
        pass
    attention = any("attention" in n and "linear" not in n for n in names)
    return "hybrid" if recurrent and attention else ("recurrent" if recurrent else "attention")


def sweep(model_type: str, tokenizer: Any) -> dict[str, Any]:
    """The raw file's row of one family (see the module docstring)."""
    from mcqa_toolkit.backends.hf import wrap

    t0 = time.perf_counter()
    try:
        model = build(model_type)
    except Unbuildable as e:
        return {"family": model_type, "built": False, "reason": str(e)}
    lm = wrap(model, tokenizer, name=f"sweep-{model_type}")
    work = workload()
    row: dict[str, Any] = {"family": model_type, "built": True, "class": type(model).__name__}
    try:
        reference = {s: plain_logprobs(model, [r for reqs in _requests(work, s) for r in reqs])
                     for s in ("letters", "options")}
        row["kind"] = kind(model)
    except Exception as e:  # noqa: BLE001 - transformers' own forward fails: not a family we can score
        return {**row, "built": False, "reason": f"its own forward fails: {_error(e)}"}
    row["raw"] = {p: measure_path(lm, work, reference, p, check=False) for p in PATHS}
    row["checked"] = {p: measure_path(lm, work, reference, p, check=True, unchecked=row["raw"][p]) for p in PATHS}
    row["generation"] = generation(lm)
    row["seconds"] = round(time.perf_counter() - t0, 2)
    row["verdict"] = verdict(row)
    return row


def verdict(row: dict[str, Any]) -> str:
    """exact / wrong / error for a user's view of a row (the self-check on): every path's scores within EXACT and
    generation the same, or which failed."""
    if not row["built"]:
        return "unbuildable"
    for p in PATHS:
        r = row["checked"][p]
        if "error" in r:
            return "error"
        if max(r["letters"], r["options"]) > EXACT:
            return "wrong"
    g = row["generation"]
    if "plain_error" in g:  # transformers' own generate fails on the family: the scores alone decide
        return "exact"
    if "error" in g:
        return "error"
    return "exact" if g["one_same"] and g["padded_same"] else "wrong"


def status(row: dict[str, Any]) -> str:
    """What the committed table holds a family to: unbuildable, or its verdict with the path the self-check kept on
    each engine path and whether generation starts from the run prefix's cache (deltas vary in their low digits
    with the CPU's kernels; these do not)."""
    if not row["built"]:
        return "unbuildable"
    kept = ", ".join(f"{p}: {row['checked'][p].get('kept', 'error')}" for p in PATHS)
    return f"{verdict(row)}; kept {kept}; generation from the run prefix's cache: " \
           f"{row['generation'].get('run_prefix_cache')}"


def near_the_bound(row: dict[str, Any]) -> bool:
    """Whether the self-check's probe found a path within a factor 4 of the bound on this family: on another CPU's
    kernels it may keep another path (the scores stay exact either way)."""
    return row["built"] and any(d is not None and EXACT / 4 < d <= 4 * EXACT for p in PATHS
                                for d in row["checked"][p].get("probe", {}).values())


def raw_file(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The sweep's raw file: every family's row with the versions, the CPU and the commit it was measured at."""
    import subprocess

    import torch
    import transformers

    from mcqa_toolkit.backends.hf import compute

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return {"date": datetime.date.today().isoformat(), "transformers": transformers.__version__,
            "torch": torch.__version__, "cpu": compute.cpu(), "threads": THREADS,
            "commit": {"sha": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain",
                                                                                "--untracked-files=no"))},
            "exact_bound": EXACT, "families": len(rows), "rows": [rows[k] for k in sorted(rows)]}


__all__ = ["EXACT", "PATHS", "THREADS", "engine_options", "generation", "kind", "measure_path", "near_the_bound",
           "plain_logprobs", "raw_file", "status", "sweep", "verdict", "workload"]
