"""Generation checked like scoring (selfcheck.py), on first use: whether greedy generation may start from a copy
of the run prefix's cache (`cached_generation`) and whether several prompts may be left-padded into one call
(`padded_generation`) on this model, each against transformers' own generate without it. Only runs that generate
pay; the results are kept like the verdict (in this process and on disk, per the verdict's key). A half-precision
model's generation is checked on its float32 twin where it fits (selfcheck.judge: the dtype's rounding would hide a
wrong cache), else in its dtype to a few steps of its rounding (selfcheck.bound).
"""
from __future__ import annotations

import json
import warnings
from typing import Any

import torch

from mcqa_toolkit.backends.hf import selfcheck
from mcqa_toolkit.backends.hf.generation import pad_id

_CHECKED: dict[str, bool] = {}  # the generation checks' results in this process (`_lazy`)


def _lazy(engine: Any, what: str, run: Any, warning: str) -> bool:
    """A generation check done on first use and kept like the verdict (memo and disk, per key and `what`); True
    when the self-check is off."""
    if engine.verdict is None:
        return True
    k = f"{selfcheck.key(engine)}.{what}"
    if k in _CHECKED:
        return _CHECKED[k]
    path = selfcheck.cache_dir() / f"{k}.json"
    try:
        ok = bool(json.loads(path.read_text())["exact"])
    except (OSError, ValueError, KeyError, TypeError):
        ok, delta = run(selfcheck.judge(engine) or engine)
        selfcheck.save(path, {"exact": ok, "max_delta": delta})
        if not ok:
            warnings.warn(f"{engine.lm.name} ({type(engine.lm.model).__name__}): {warning} ({delta:.2g} off)",
                          RuntimeWarning, stacklevel=5)
    _CHECKED[k] = ok
    return ok


def cached_generation(engine: Any) -> bool:
    """Whether generation may start from a copy of the run prefix's cache on this model (engine.prefix_cache_for):
    a probe prompt generated greedily for a few tokens by transformers' generate with and without it, their
    per-step log-probs within `bound`. Checked on first use, kept like the verdict."""
    return _lazy(engine, "cached", _cached_check, "generation from the run prefix's cache differs from generation "
                 "without it on this model; every prompt is generated from its first token")


def _cached_check(engine: Any) -> tuple[bool, float]:
    lm = engine.lm
    run, letters, _ = selfcheck.probe(lm)
    ids = list(letters[0][0].tokens)
    pad = pad_id(lm.tokenizer) or 0
    scores = []
    with torch.inference_mode(), engine.pinned():
        for cache in (None, engine.prefix_cache_for(ids, run, checked=False)):
            kw = {} if cache is None else {"past_key_values": cache}
            try:
                scores.append(_generated(lm, [ids], [[1] * len(ids)], pad, **kw)[0])
            except Exception:  # noqa: BLE001 - generate fails from the cache (or at all): no cache for generation
                return False, float("inf")
    if scores[0].shape != scores[1].shape:
        return False, float("inf")
    finite = torch.isfinite(scores[0]) & torch.isfinite(scores[1])
    delta = float((scores[0] - scores[1])[finite].abs().max())
    return delta <= selfcheck.bound(engine.dtype, float(scores[0][finite].abs().max())), delta


def padded_generation(engine: Any) -> bool:
    """Whether greedy generation may left-pad several prompts into one call on this model (generation.generate_padded):
    two probe prompts of different lengths, left-padded with an attention mask (and positions counted from it, as
    transformers' generate gives them where the model takes `position_ids`), against each alone through the plain
    forward: their next-token log-probs within `bound`. Checked on first use (only runs that generate pay), kept
    like the verdict."""
    return _lazy(engine, "padded", _padded_check, "left-padded greedy generation differs from each prompt alone on "
                 "this model; its prompts are generated one at a time")


def _padded_check(engine: Any) -> tuple[bool, float]:
    """Two probe prompts of different lengths generated greedily for a few tokens by transformers' generate,
    left-padded into one call with an attention mask (as generation.generate_padded does) and each alone: the
    largest difference of their per-step log-probs (inf when the padded call fails or stops elsewhere)."""
    lm = engine.lm
    _, letters, _ = selfcheck.probe(lm)
    prompts = [letters[0][0].tokens, letters[1][0].tokens[:-3]]
    width = max(map(len, prompts))
    pad = pad_id(lm.tokenizer) or 0
    rows = [([pad] * (width - len(p)) + list(p), [0] * (width - len(p)) + [1] * len(p)) for p in prompts]
    with torch.inference_mode(), engine.pinned():
        try:
            padded = _generated(lm, [r for r, _ in rows], [m for _, m in rows], pad)
        except Exception:  # noqa: BLE001 - a model whose generate fails on padded rows: one at a time
            return False, float("inf")
        alone = [_generated(lm, [list(p)], [[1] * len(p)], pad)[0] for p in prompts]
    if any(a.shape != b.shape for a, b in zip(padded, alone, strict=True)):
        return False, float("inf")
    finite = [torch.isfinite(a) & torch.isfinite(b) for a, b in zip(padded, alone, strict=True)]
    delta = max(float((a - b)[f].abs().max()) for a, b, f in zip(padded, alone, finite, strict=True))
    largest = max(float(a[f].abs().max()) for a, f in zip(alone, finite, strict=True))
    return delta <= selfcheck.bound(engine.dtype, largest), delta


def _generated(lm: Any, ids: list[list[int]], mask: list[list[int]], pad: int, steps: int = 3,
               **kw: Any) -> list[torch.Tensor]:
    """Per row, the (steps, vocabulary) log-probs of greedy generation by transformers' generate (`kw`: a
    `past_key_values` to start from)."""
    out = lm.model.generate(input_ids=torch.tensor(ids, device=lm.device),
                            attention_mask=torch.tensor(mask, device=lm.device), max_new_tokens=steps,
                            min_new_tokens=steps, do_sample=False, temperature=None, top_p=None, top_k=None,
                            pad_token_id=pad, output_scores=True, return_dict_in_generate=True, **kw)
    scores = torch.stack([s.float().log_softmax(-1) for s in out.scores], 1)
    return list(scores)
