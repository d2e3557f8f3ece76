"""The engine checks itself on the model it is given, in its device and dtype, before it scores anything.

Why: the engine computes attention and caches its own way (shared run-prefix caches, packed trie rows, tree
attention), and a model family whose attention or state it does not reproduce (attention sinks, ALiBi, latent
attention, a recurrent state, an attention that ignores the implementation switch) would otherwise get wrong
log-probabilities silently; transformers adds and rewrites families every release, so no list fixed today is right
tomorrow. So when a PrefixScorer is made, a short probe is scored by its path and by the plain forward (plain.py):
a run prefix longer than the model's sliding window (up to PROBE_MAX_TOKENS), an item on it with two option orders
(and a second item where the engine's budget brings several per call), letters and option log-likelihoods. Where
the largest difference exceeds the dtype's bound (`bound`), that path is refused with its reason, the next one is
tried (tree attention -> dense masks -> unpacked rows -> each sequence on a copy of the run prefix's cache -> the
plain path, which is the reference itself), and a
warning says which and why. The verdict is kept per model weights, engine code, versions, device, dtype and engine
options, in this process and on disk beside the dequantised weights (`cache_dir`), so a later load pays nothing;
`check=False` (an engine option) skips it for a model its user has checked.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata as md
import json
import os
import time
import warnings
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mcqa_toolkit.backends.hf.heads import request_logprobs
from mcqa_toolkit.backends.hf.request import Request

PATHS = ("tree", "masks", "unpacked", "sequential", "plain")  # from the most sharing to none: a refused one steps down
# A path is refused beyond these. In fp32, ten times the engine's tested equality bound (1e-4): kernels round a long
# probe past that (the embedded Gemma-3-270M's, 540 tokens: 1.2e-4 with the ISA forced to AVX2,
# results/benchmarks/engine5_2026-12-02/), while every wrong path the support sweep found is 8.8e-3 off or more.
# In bf16 / fp16 rounding alone moves log-probs by a few 1e-2 on real models.
FP32_BOUND = 1e-3
HALF_BOUND = 0.1
PROBE_MAX_TOKENS = 2048    # the probe's run prefix crosses a sliding window up to this length
PROBE_WORDS = ("a prova do exame nacional tem questoes de ciencias humanas natureza linguagens e matematica com "
               "cinco alternativas cada uma the exam asks about history geography physics chemistry biology "
               "el examen de acceso pregunta sobre lengua literatura y filosofia la prova di ammissione chiede "
               "logica cultura generale e scienze").split()
VERSION = 1                # of the verdict's format


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the self-check found: the path the engine scores with (`path`), the one its options asked for
    (`asked`), the largest |engine - plain| of each path tried (None: it ended in an error), why each refused path
    was refused, the bound, the probe's length, and where the verdict came from ("checked", "cached", "off")."""

    path: str
    asked: str
    deltas: dict[str, float | None]
    reasons: dict[str, str]
    bound: float
    probe_tokens: int
    seconds: float
    source: str = "checked"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def bound(dtype: torch.dtype) -> float:
    return FP32_BOUND if dtype == torch.float32 else HALF_BOUND


@functools.lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """sha256 of the engine's own code (this folder's modules): any change to it checks every model again."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


_DIGESTS: weakref.WeakKeyDictionary[Any, tuple[tuple[int, ...], str]] = weakref.WeakKeyDictionary()


def _weights(lm: Any) -> str:
    """The model's weights: the GGUF's sha256 when known, else a digest of every parameter's shape and sum
    (accumulated in float64 where the weights are), computed again only after a parameter changed in place (its
    version counter: a fine-tuning step, a load_state_dict)."""
    if getattr(lm, "weights_sha256", ""):
        return lm.weights_sha256
    params = list(lm.model.named_parameters())
    versions = tuple(p._version for _, p in params)
    known = _DIGESTS.get(lm.model)
    if known is not None and known[0] == versions:
        return known[1]
    h = hashlib.sha256()
    with torch.no_grad():
        for name, p in params:
            h.update(f"{name}{tuple(p.shape)}{p.dtype}{float(torch.sum(p, dtype=torch.float64))!r}".encode())
    _DIGESTS[lm.model] = (versions, h.hexdigest())
    return h.hexdigest()


def key(engine: Any) -> str:
    """What a verdict holds for: model (class, configuration, weights), engine code and options, versions, device,
    dtype, the CPU's kernels."""
    lm = engine.lm
    device = lm.device
    parts = {"version": VERSION, "engine": engine_fingerprint(), "class": type(lm.model).__name__,
             "config": lm.model.config.to_json_string(use_diff=False), "weights": _weights(lm),
             "options": engine.path_options(), "dtype": str(engine.dtype), "device": device.type,
             "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else
             torch.backends.cpu.get_cpu_capability(),
             "packages": {p: _version(p) for p in ("torch", "transformers")}}
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _version(package: str) -> str | None:
    try:
        return md.version(package)
    except md.PackageNotFoundError:
        return None


def _window(config: Any) -> int | None:
    """The model's sliding window (the largest, where layers differ), None without one."""
    found = [getattr(config, k, None) for k in ("sliding_window", "sliding_window_size", "attention_window")]
    windows = [w for w in found if isinstance(w, int) and not isinstance(w, bool) and w > 0]
    return max(windows) if windows else None


def probe(lm: Any, items: int = 2) -> tuple[tuple[int, ...], list[list[Request]], list[list[Request]]]:
    """(run prefix, letters per item, options per item) of the probe, from a seeded text in the tokenizer's own
    tokens: a run prefix 16 tokens past the sliding window (48 tokens without one); item A with two option orders,
    and with `items` 2 item B with one. Each order's option request extends its letter request's prompt by one
    option, so one plain forward of it answers both."""
    config = lm.model.config.get_text_config() if hasattr(lm.model.config, "get_text_config") else lm.model.config
    window = _window(config)
    run_len = min(window + 16, PROBE_MAX_TOKENS) if window else 48
    rng = np.random.default_rng(0)
    tok = lm.tokenizer
    ids: list[int] = []
    while len(ids) < run_len + 64:
        ids += tok(" ".join(rng.choice(PROBE_WORDS, 64)), add_special_tokens=False).input_ids
    bos = [tok.bos_token_id] if tok.bos_token_id is not None else []
    run = tuple(bos + ids[: run_len - len(bos)])
    rest = iter(ids[run_len - len(bos):])

    def take(n: int) -> tuple[int, ...]:
        return tuple(next(rest) for _ in range(n))

    letters = _candidates(tok, ids)
    stem_a, orders_a, stem_b, order_b, option = take(6), [take(6), take(6)], take(6), take(6), take(3)
    prompts = [[run + stem_a + o for o in orders_a], [run + stem_b + order_b]][:items]
    return (run, [[Request(p, len(p), letters) for p in item] for item in prompts],
            [[Request(p + option, len(p)) for p in item] for item in prompts])


def _reference(engine: Any, letters: list[list[Request]], options: list[list[Request]]
               ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The plain forward's answers to the probe: one forward of each option sequence (its letter request's prompt
    plus the option), from its first token, no cache: the letter log-probs at the prompt's end, the option's after
    it. The model's linear layers compute with the engine's kernel (kernels.py, tested against torch's own); the
    attention and any cache are the model's own."""
    from mcqa_toolkit.backends.hf.plain import forward_logits

    lm = engine.lm
    out_letters, out_options = [], []
    with torch.inference_mode(), engine.pinned(), engine.kernels():
        for letter, option in zip((r for item in letters for r in item), (r for item in options for r in item),
                                  strict=True):
            keep = len(option.tokens) - option.n_context + 1
            logits = forward_logits(lm.model, torch.tensor([option.tokens], device=lm.device), keep)[0]
            out_letters.append(request_logprobs(letter, logits[:1]))
            out_options.append(request_logprobs(option, logits))
    return out_letters, out_options


def _candidates(tok: Any, ids: Sequence[int]) -> tuple[int, ...]:
    """Four distinct next-token candidates: the tokens of ' A' .. ' D' where they are single and distinct, else
    four of the probe text's own tokens."""
    got = [tok(f" {x}", add_special_tokens=False).input_ids for x in "ABCD"]
    if all(len(g) == 1 for g in got) and len({g[0] for g in got}) == 4:
        return tuple(g[0] for g in got)
    return tuple(dict.fromkeys(ids))[:4]


def _scored(engine: Any, run: tuple[int, ...], items: list[list[Request]]) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    step = max(1, engine.items_per_call)
    for lo in range(0, len(items), step):
        for values in engine.score_block([(reqs, run) for reqs in items[lo: lo + step]]):
            out += values
    return out


def _delta(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    return max(float(np.abs(np.asarray(x) - np.asarray(y)).max()) for x, y in zip(a, b, strict=True))


def check(engine: Any) -> Verdict:
    """Score the probe on the engine's path and on the plain forward; step down PATHS from the asked path until
    one is within `bound` (the plain path is the reference itself)."""
    t0 = time.perf_counter()
    lm, asked = engine.lm, engine.path
    run, letters, options = probe(lm, 2 if engine.items_per_call > 1 else 1)
    ref_letters, ref_options = _reference(engine, letters, options)
    reference = ref_letters + ref_options
    limit = bound(engine.dtype)
    deltas: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    chosen = "plain"
    for path in PATHS[PATHS.index(asked):]:
        if path == "plain":
            break
        try:
            other = type(engine)(lm, check=False, **{**engine.path_options(), **PATH_OPTIONS[path]})
            if path == "sequential":
                other.take("sequential")
            if other.path != path:  # the model cannot take this path at all (e.g. no masks of ours)
                reasons[path] = f"not available for this model (the engine would take {other.path})"
                continue
            got = _scored(other, run, letters) + _scored(other, run, options)
            if other.path != path:  # it stepped down itself while scoring (a cache that takes no masks of ours)
                reasons[path] = f"not available for this model's cache (the engine took {other.path})"
                continue
        except Exception as e:  # noqa: BLE001 - a path that fails on the model is refused with its error
            deltas[path] = None
            reasons[path] = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"
            continue
        delta = deltas[path] = _delta(got, reference)
        if delta <= limit:
            chosen = path
            break
        reasons[path] = f"{delta:.2g} off the plain forward (bound {limit:g})"
    return Verdict(chosen, asked, deltas, reasons, limit, len(letters[0][0].tokens), time.perf_counter() - t0)


PATH_OPTIONS: dict[str, dict[str, Any]] = {
    "tree": {"attention": "tree", "pack": True}, "masks": {"attention": "masks", "pack": True},
    "unpacked": {"pack": False}, "sequential": {"pack": False}}

_MEMO: dict[str, Verdict] = {}


def cache_dir() -> Path:
    from mcqa_toolkit.backends.cache import default_cache_dir

    return default_cache_dir() / "selfcheck"


def verdict(engine: Any) -> Verdict:
    """The engine's verdict on its model: from this process, from the disk, or checked now (and kept); a warning
    when its path is refused."""
    k = key(engine)
    found = _MEMO.get(k)
    if found is not None:
        return found
    path = cache_dir() / f"{k}.json"
    try:
        found = dataclasses.replace(Verdict(**json.loads(path.read_text())), source="cached")
    except (OSError, ValueError, TypeError):
        found = check(engine)
        save(path, found)
        if found.path != found.asked:
            warnings.warn(_warning(engine, found), RuntimeWarning, stacklevel=4)
    _MEMO[k] = found
    return found


def save(path: Path, v: Verdict | dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(v.to_dict() if isinstance(v, Verdict) else v, indent=1))
        tmp.replace(path)
    except OSError:  # a read-only cache: the verdict holds for this process only
        pass


def _warning(engine: Any, v: Verdict) -> str:
    lm = engine.lm
    why = "; ".join(f"{p}: {r}" for p, r in v.reasons.items())
    return (f"{lm.name} ({type(lm.model).__name__}, {engine.dtype}, {lm.device}): the engine's {v.asked} path is "
            f"refused on this model ({why}); it scores with the {v.path} path instead "
            f"(engine option check=False skips this check)")
