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
from transformers import StoppingCriteria, StoppingCriteriaList

from mcqa_toolkit.models.hf import LM
from mcqa_toolkit.scoring.encode import encode, prompt_text
from mcqa_toolkit.scoring.extract import extract_answer
from mcqa_toolkit.scoring.first_token import Scored
from mcqa_toolkit.scoring.prefix import PrefixScorer

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
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


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
        kwargs["stopping_criteria"] = StoppingCriteriaList([StopOnStrings(tok, stop, len(ids))])
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


@torch.inference_mode()
def generate_batch(lm: LM, id_lists: Sequence[Sequence[int]], *, max_new_tokens: int = 16,
                   stop: Sequence[str] = DEFAULT_STOP) -> list[str]:
    """Greedy continuations of several prompts in one left-padded batch.

    Decoding one token reads every weight once whatever the batch size (Gemma's 262k x 640 LM head alone is
    670 MB in fp32), so a batch of B prompts costs little more than one. Rows finish independently at their
    stop strings. The batch composition changes float rounding slightly, so the runner keeps it fixed.
    """
    tok = lm.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
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
    out = lm.model.generate(input_ids=ids.to(lm.device), attention_mask=mask.to(lm.device), **kwargs)
    texts = []
    for row in out[:, width:]:
        text = tok.decode(row, skip_special_tokens=True)
        for s in stop:
            cut = text.find(s)
            if cut >= 0:
                text = text[:cut]
        texts.append(text)
    return texts


def score_generate(lm: LM, scorer: PrefixScorer, prompts: Sequence[Any], *, language: str | None = None,
                   max_new_tokens: int = 16, temperature: float = 0.0, stop: Sequence[str] = DEFAULT_STOP,
                   seeds: Sequence[int] | None = None, shared_prefix: Sequence[int] = (),
                   batch_size: int = 1) -> list[Scored]:
    """Generate an answer for each prompt and extract the chosen letter; option_scores are one-hot (NaN if none).

    Greedy decoding with `batch_size` > 1 generates the prompts in left-padded batches (no prefix cache);
    otherwise prompts go one by one, reusing the run-prefix cache, each sampled with its own seed.
    """
    id_lists = [encode(lm, *prompt_text(lm, p)) for p in prompts]
    if temperature == 0 and batch_size > 1:
        texts = []
        for start in range(0, len(id_lists), batch_size):
            texts += generate_batch(lm, id_lists[start:start + batch_size], max_new_tokens=max_new_tokens, stop=stop)
    else:
        texts = [generate_text(lm, ids, max_new_tokens=max_new_tokens, temperature=temperature, stop=stop,
                               seed=seeds[i] if seeds is not None else 0, scorer=scorer, shared_prefix=shared_prefix)
                 for i, ids in enumerate(id_lists)]
    out = []
    for p, ids, gen in zip(prompts, id_lists, texts):
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
