"""Generation scoring: the model writes an answer, the extraction cascade (extract.py) reads the letter.

Greedy when temperature is 0, else sampling seeded per record (torch.manual_seed, so one record's draw
does not depend on how many were made before it). The run prefix's KV cache (instruction + few-shot block)
is handed to `generate` so that block is not re-encoded for every item.
"""
from __future__ import annotations

import copy
from typing import Any, Sequence

import numpy as np
import torch

from mcqa_toolkit.models.hf import LM
from mcqa_toolkit.scoring.encode import encode, prompt_text
from mcqa_toolkit.scoring.extract import extract_answer
from mcqa_toolkit.scoring.first_token import Scored
from mcqa_toolkit.scoring.prefix import PrefixScorer

DEFAULT_STOP = ("\n\n",)


@torch.inference_mode()
def generate_text(lm: LM, ids: Sequence[int], *, max_new_tokens: int = 16, temperature: float = 0.0,
                  stop: Sequence[str] = DEFAULT_STOP, seed: int = 0, scorer: PrefixScorer | None = None,
                  shared_prefix: Sequence[int] = ()) -> str:
    """Continuation text of `ids` (stop strings cut off). Reuses `scorer`'s run-prefix cache when it applies."""
    tok = lm.tokenizer
    kwargs: dict[str, Any] = {"max_new_tokens": max_new_tokens, "pad_token_id": tok.pad_token_id or tok.eos_token_id}
    if temperature > 0:
        kwargs.update(do_sample=True, temperature=float(temperature), top_k=0, top_p=1.0)
        torch.manual_seed(seed)
    else:
        kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    if stop:
        kwargs.update(stop_strings=list(stop), tokenizer=tok)
    if scorer is not None:
        cache = scorer.prefix_cache_for(ids, shared_prefix)
        if cache is not None:
            kwargs["past_key_values"] = cache
    input_ids = torch.tensor([list(ids)], device=lm.device)
    out = lm.model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **kwargs)
    text = tok.decode(out[0, len(ids):], skip_special_tokens=True)
    for s in stop:  # generate stops after a stop string; the answer is what precedes it
        cut = text.find(s)
        if cut >= 0:
            text = text[:cut]
    return text


def score_generate(lm: LM, scorer: PrefixScorer, prompts: Sequence[Any], *, language: str | None = None,
                   max_new_tokens: int = 16, temperature: float = 0.0, stop: Sequence[str] = DEFAULT_STOP,
                   seeds: Sequence[int] | None = None, shared_prefix: Sequence[int] = ()) -> list[Scored]:
    """Generate an answer for each prompt and extract the chosen letter; option_scores are one-hot (NaN if none)."""
    out = []
    for i, p in enumerate(prompts):
        text, special = prompt_text(lm, p)
        ids = encode(lm, text, special)
        gen = generate_text(lm, ids, max_new_tokens=max_new_tokens, temperature=temperature, stop=stop,
                            seed=seeds[i] if seeds is not None else 0, scorer=scorer,
                            shared_prefix=shared_prefix)
        ex = extract_answer(gen, letters=p.letters, language=language)
        n = len(p.permutation)
        if ex.option_index is None:
            scores, choice = np.full(n, np.nan), -1
        else:
            choice = int(p.permutation[ex.option_index])
            scores = np.zeros(n)
            scores[choice] = 1.0
        out.append(Scored(option_scores=scores, choice=choice, status=ex.status, extraction_rule=ex.rule,
                          generated_text=gen, n_prompt_tokens=len(ids)))
    return out
