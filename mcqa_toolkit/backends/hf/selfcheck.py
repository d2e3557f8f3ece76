"""The engine checks itself on the model it is given, in its device and dtype, before it scores anything.

Why: the engine computes attention and caches its own way (shared run-prefix caches, packed trie rows, tree
attention), and a model family whose attention or state it does not reproduce (attention sinks, ALiBi, latent
attention, a recurrent state, an attention that ignores the implementation switch) would otherwise get wrong
log-probabilities silently; transformers adds and rewrites families every release, so no list fixed today is right
tomorrow. So when a PrefixScorer is made, a short probe (probe.py) is scored by its path and by the plain forward
(plain.py): a run prefix longer than the model's sliding window, an item on it with two option orders (and a second
item where the engine's budget brings several per call), letters and option log-likelihoods. Where the largest
difference exceeds the bound, that path is refused with its reason, the next one is tried (tree attention -> dense
masks -> unpacked rows -> each sequence on a copy of the run prefix's cache -> the plain path, which is the
reference itself), and a warning says which and why.

In bf16 / fp16 rounding alone moves log-probs by more than some wrong paths do (twin.py), so there each path is
judged twice: on the model's float32 twin against the twin's plain forward (FP32_BOUND: is the path right?), and in
the dtype against that float32 reference, held to HALF_RATIO times the dtype's own plain forward's distance from it
(does the path round no worse than the plain forward does?); without room for the twin, in the dtype against its
plain forward, to twin.steps of its rounding.

The verdict is kept per model weights, engine code, versions, device, dtype and engine options, in this process and
on disk beside the dequantised weights (`cache_dir`), so a later load pays nothing; `check=False` (an engine option)
skips it for a model its user has checked.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mcqa_toolkit.backends.hf import twin
from mcqa_toolkit.backends.hf.heads import request_logprobs
from mcqa_toolkit.backends.hf.probe import probe
from mcqa_toolkit.backends.hf.request import Request
from mcqa_toolkit.backends.hf.verdict_key import key

PATHS = ("tree", "masks", "unpacked", "sequential", "plain")  # from the most sharing to none: a refused one steps down
# A path is refused beyond these. In fp32, ten times the engine's tested equality bound (1e-4): kernels round a long
# probe past that (the embedded Gemma-3-270M's, 540 tokens: 1.2e-4 with the ISA forced to AVX2,
# results/benchmarks/engine5_2026-12-02/), while every wrong path the support sweep found is 8.8e-3 off or more.
FP32_BOUND = 1e-3
# In bf16 the embedded model's paths are 1.1-1.4 times as far from the float32 forward as bf16's plain forward is
# (0.33-0.42 vs 0.30 on the probe; results/benchmarks/engine6_2026-12-03/); a wrong path is further.
HALF_RATIO = 2.0


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the self-check found: the path the engine scores with (`path`), the one its options asked for
    (`asked`), the largest |engine - plain| of each path tried in the dtype `judged_in` (the float32 twin's for a
    half-precision model where it fitted; None: it ended in an error) and its `bound`, in a half dtype each path's
    largest |engine - float32 plain| in its own dtype (`dtype_deltas`) and their bound, why each refused path was
    refused, the probe's length, and where the verdict came from ("checked", "cached", "off")."""

    path: str
    asked: str
    deltas: dict[str, float | None]
    reasons: dict[str, str]
    bound: float
    probe_tokens: int
    seconds: float
    judged_in: str
    dtype_deltas: dict[str, float] = dataclasses.field(default_factory=dict)
    dtype_bound: float | None = None
    source: str = "checked"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def bound(dtype: torch.dtype, largest: float) -> float:
    """How far a path may be from the plain forward computed in `dtype`, the compared values reaching `largest`:
    FP32_BOUND in float32, else twin.steps of the dtype's rounding."""
    return FP32_BOUND if dtype == torch.float32 else twin.steps(dtype, largest)


def judge(engine: Any) -> Any | None:
    """For a half-precision model, an engine of the same options on its float32 twin, on which the checks judge a
    path's structure; None for a float32 model or where the twin does not fit."""
    lm32 = twin.float32(engine.lm)
    return None if lm32 is None else type(engine)(lm32, check=False, **engine.path_options())


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


def _scored(engine: Any, run: tuple[int, ...], items: list[list[Request]]) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    step = max(1, engine.items_per_call)
    for lo in range(0, len(items), step):
        for values in engine.score_block([(reqs, run) for reqs in items[lo: lo + step]]):
            out += values
    return out


def _delta(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    """The largest |a - b|: equal values (-inf included) differ by 0, a NaN or an infinity against a number by inf."""
    def one(x: np.ndarray, y: np.ndarray) -> float:
        with np.errstate(invalid="ignore"):
            d = np.where(x == y, 0.0, np.abs(x - y))
        return float(np.nan_to_num(d, nan=np.inf, posinf=np.inf).max(initial=0.0))
    return max(one(np.asarray(x, np.float64), np.asarray(y, np.float64)) for x, y in zip(a, b, strict=True))


def check(engine: Any) -> Verdict:
    """Score the probe on the engine's path and on the plain forward; step down PATHS from the asked path until
    one is within the bounds (the plain path is the reference itself). A half-precision model is judged on its
    float32 twin, and in its dtype against the twin's plain forward (the module's docstring)."""
    t0 = time.perf_counter()
    lm, asked = engine.lm, engine.path
    run, letters, options = probe(lm, 2 if engine.items_per_call > 1 else 1)
    plain = _answers(engine, "plain", run, letters, options)
    if not all(np.isfinite(v).all() for v in plain):
        raise NotFinite(f"{lm.name} ({type(lm.model).__name__}) in {engine.dtype} on {lm.device}: its own plain "
                        f"forward gives non-finite log-probabilities on the self-check's probe (the model overflows "
                        f"this dtype); load it in float32 or bfloat16")
    exact = judge(engine)
    judged = plain if exact is None else _answers(exact, "plain", run, letters, options)
    limit = bound(engine.dtype if exact is None else torch.float32, _largest(plain))
    dtype_limit = None if exact is None else max(HALF_RATIO * _delta(plain, judged), FP32_BOUND)
    deltas: dict[str, float | None] = {}
    dtype_deltas: dict[str, float] = {}
    reasons: dict[str, str] = {}
    chosen = "plain"
    for path in PATHS[PATHS.index(asked):-1]:
        try:
            got = _answers(engine, path, run, letters, options)
            if exact is not None:
                dtype_deltas[path] = _delta(got, judged)
                got = _answers(exact, path, run, letters, options)
        except Unavailable as e:
            reasons[path] = str(e)
            continue
        except Exception as e:  # noqa: BLE001 - a path that fails on the model is refused with its error
            deltas[path] = None
            reasons[path] = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}"
            continue
        delta = deltas[path] = _delta(got, judged)
        if delta > limit:
            where = "" if exact is None else " in float32"
            reasons[path] = f"{delta:.2g} off the plain forward{where} (bound {limit:.2g})"
        elif dtype_limit is not None and dtype_deltas[path] > dtype_limit:
            reasons[path] = (f"{dtype_deltas[path]:.2g} off float32's plain forward in {engine.dtype}, over "
                             f"{HALF_RATIO:g} x the {engine.dtype} plain forward's distance (bound {dtype_limit:.2g})")
        else:
            chosen = path
            break
    return Verdict(chosen, asked, deltas, reasons, limit, len(letters[0][0].tokens), time.perf_counter() - t0,
                   str(engine.dtype if exact is None else torch.float32), dtype_deltas, dtype_limit)


class Unavailable(Exception):
    """The model cannot take a path at all (the engine would step down from it itself)."""


class NotFinite(ValueError):
    """The model's own plain forward gives NaN or infinite log-probs in its dtype: no path can score it."""


def _answers(engine: Any, path: str, run: tuple[int, ...], letters: list[list[Request]],
             options: list[list[Request]]) -> list[np.ndarray]:
    """The probe's answers on `path` by an engine of `engine`'s model and options (the plain forward's: _reference)."""
    if path == "plain":
        ref_letters, ref_options = _reference(engine, letters, options)
        return ref_letters + ref_options
    other = type(engine)(engine.lm, check=False, **{**engine.path_options(), **PATH_OPTIONS[path]})
    if path == "sequential":
        other.take("sequential")
    if other.path != path:  # the model cannot take this path at all (e.g. no masks of ours)
        raise Unavailable(f"not available for this model (the engine would take {other.path})")
    got = _scored(other, run, letters) + _scored(other, run, options)
    if other.path != path:  # it stepped down itself while scoring (a cache that takes no masks of ours)
        raise Unavailable(f"not available for this model's cache (the engine took {other.path})")
    return got


def _largest(values: Sequence[np.ndarray]) -> float:
    finite = [np.abs(v[np.isfinite(v)]).max() for v in map(np.asarray, values) if np.isfinite(v).any()]
    return float(max(finite, default=1.0))


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
