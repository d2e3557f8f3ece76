"""Text generation with a local transformers model: one prompt at a time (sampling, or reusing the run
prefix's KV cache), or greedy with several prompts left-padded into one tensor (`generate_padded`).

Greedy when temperature is 0, else sampling seeded per record (torch.manual_seed, so one record's draw
does not depend on how many were made before it). Every call returns `Generation`s with the tokens the
model really forwarded: prompt tokens not covered by a reused cache, plus every generated token but the
last (which is sampled, never fed back).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from mcqa_toolkit.backends.base import Generation
from mcqa_toolkit.backends.hf.loading import LM

DEFAULT_STOP = ("\n\n",)


class StopOnStrings(StoppingCriteria):
    """Stop when the decoded continuation contains a stop string.

    transformers' own `stop_strings` option rebuilds a table over the whole vocabulary on every `generate`
    call (~2.5 s for Gemma's 262k tokens, more than the generation itself); decoding the few new tokens
    each step is enough for the short answers we generate.
    """

    def __init__(self, tokenizer: Any, stops: Sequence[str], prompt_len: int):
        self.tokenizer, self.stops, self.prompt_len = tokenizer, tuple(stops), prompt_len

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: Any) -> torch.BoolTensor:
        done = [any(s in self.tokenizer.decode(row[self.prompt_len:], skip_special_tokens=True) for s in self.stops)
                for row in input_ids]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)  # type: ignore[return-value]  # a bool tensor; torch types it Tensor


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """`text` up to the first stop string (generation stops after it; the answer is what precedes it)."""
    hit = False
    for s in stop:
        cut = text.find(s)
        if cut >= 0:
            text, hit = text[:cut], True
    return text, hit


def pad_id(tok: Any) -> int:
    """The token generation pads with: the tokenizer's pad token, else its end of sequence."""
    return tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id


def _new_tokens(row: torch.Tensor, pad: int) -> int:
    """Generated tokens of one output row (a finished row is filled with pad tokens after its end)."""
    real = (row != pad).nonzero()
    return int(real[-1].item()) + 1 if len(real) else 0


def _finish(tok: Any, row: torch.Tensor, n_new: int, max_new_tokens: int, stop: Sequence[str]) -> tuple[str, str]:
    text, hit = cut_at_stop(tok.decode(row[:n_new], skip_special_tokens=True), stop)
    if hit:
        return text, "stop"
    return text, "length" if n_new >= max_new_tokens else "eos"


@torch.inference_mode()
def generate_one(lm: LM, ids: Sequence[int], *, max_new_tokens: int = 16, temperature: float = 0.0,
                 stop: Sequence[str] = DEFAULT_STOP, seed: int = 0, cache: Any = None, cached: int = 0
                 ) -> tuple[Generation, int]:
    """Continuation of `ids`, and the number of tokens forwarded. `cache` is a private KV cache holding
    `ids[:cached]` (the run prefix), so those tokens are not encoded again."""
    tok = lm.tokenizer
    kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens, "pad_token_id": pad_id(tok)}
    if temperature > 0:
        kwargs.update(do_sample=True, temperature=float(temperature), top_k=0, top_p=1.0)
        torch.manual_seed(seed)
    else:
        kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    if stop:
        kwargs["stopping_criteria"] = StoppingCriteriaList([StopOnStrings(tok, stop, len(ids))])
    if cache is not None:
        kwargs["past_key_values"] = cache
    input_ids = torch.tensor([list(ids)], device=lm.device)
    out = lm.model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),  # type: ignore[operator]  # transformers types PreTrainedModel without GenerationMixin
                            **kwargs)
    row = out[0, len(ids):]
    n_new = _new_tokens(row, pad_id(tok)) if pad_id(tok) != tok.eos_token_id else len(row)
    text, reason = _finish(tok, row, n_new, max_new_tokens, stop)
    forwarded = len(ids) - (cached if cache is not None else 0) + max(n_new - 1, 0)
    return Generation(text, len(ids), n_new, reason), forwarded


@torch.inference_mode()
def generate_padded(lm: LM, id_lists: Sequence[Sequence[int]], *, max_new_tokens: int = 16,
                   stop: Sequence[str] = DEFAULT_STOP) -> tuple[list[Generation], int, int]:
    """Greedy continuations of several prompts left-padded into one tensor: (generations, real tokens
    forwarded, pad tokens forwarded).

    Decoding one token reads every weight once whatever the number of rows (Gemma's 262k x 640 LM head alone is
    670 MB in fp32), so B prompts cost little more than one. Rows finish independently at their
    stop strings. Which prompts share the tensor changes float rounding slightly, so the runner keeps its blocks fixed.
    """
    tok = lm.tokenizer
    pad = pad_id(tok)
    width = max(len(x) for x in id_lists)
    ids = torch.full((len(id_lists), width), pad, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, x in enumerate(id_lists):
        ids[row, width - len(x):] = torch.tensor(list(x))
        mask[row, width - len(x):] = 1
    kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens, "pad_token_id": pad, "do_sample": False,
                              "temperature": None, "top_p": None, "top_k": None}
    if stop:
        kwargs["stopping_criteria"] = StoppingCriteriaList([StopOnStrings(tok, stop, width)])
    out = lm.model.generate(input_ids=ids.to(lm.device), attention_mask=mask.to(lm.device),  # type: ignore[operator]  # as above
                            **kwargs)
    new = out[:, width:]
    gens, forwarded = [], 0
    for x, row in zip(id_lists, new, strict=True):
        n_new = _new_tokens(row, pad)
        text, reason = _finish(tok, row, n_new, max_new_tokens, stop)
        gens.append(Generation(text, len(x), n_new, reason))
        forwarded += len(x) + max(n_new - 1, 0)
    steps = max(new.shape[1] - 1, 0)
    padded = len(id_lists) * (width + steps) - forwarded
    return gens, forwarded, padded
