"""Generation scoring: the backend writes an answer, the extraction cascade (extract.py) reads the letter; the
`cot` method lets it think first and reads its final answer (reasoning.py).

A reasoning model's thinking (returned apart, or inline in <think> blocks) is never read for a letter: it is
kept in the record's extra as `reasoning`, with `reasoning_tokens` and `answer_tokens` where the provider
reports the split.

Greedy when temperature is 0, else sampled with one seed per record (the runner derives it from the
strategy seed, item and shuffle), so one record's draw never depends on the others. option_scores are
one-hot on the extracted choice (NaN when nothing was extracted).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mcqa_toolkit.backends.base import Backend
from mcqa_toolkit.scoring.reasoning import read_answer
from mcqa_toolkit.scoring.scored import Scored

DEFAULT_STOP = ("\n\n",)


def score_generate(backend: Backend, prompts: Sequence[Any], *, language: str | None = None,
                   max_new_tokens: int = 16, temperature: float = 0.0, stop: Sequence[str] = DEFAULT_STOP,
                   seeds: Sequence[int] | None = None, final: bool = False) -> list[Scored]:
    """Generate an answer for each prompt (one backend call for the whole block) and extract the chosen letter:
    the first answer the cascade finds, or with `final` (chain of thought) the last one given."""
    gens = backend.generate(prompts, max_new_tokens=max_new_tokens, temperature=temperature, stop=stop, seeds=seeds)
    out = []
    for p, gen in zip(prompts, gens, strict=True):
        ex, _, thinking = read_answer(gen.text, gen.reasoning, p.letters, language, final)
        n = len(p.permutation)
        if ex.option_index is None:
            scores, choice = np.full(n, np.nan), -1
        else:
            choice = int(p.permutation[ex.option_index])
            scores = np.zeros(n)
            scores[choice] = 1.0
        extra = {"n_generated_tokens": gen.n_generated_tokens, "finish_reason": gen.finish_reason}
        if thinking:
            extra["reasoning"] = thinking
        if gen.n_reasoning_tokens is not None:
            extra.update(reasoning_tokens=gen.n_reasoning_tokens,
                         answer_tokens=gen.n_generated_tokens - gen.n_reasoning_tokens)
        out.append(Scored(option_scores=scores, choice=choice, status=ex.status, extraction_rule=ex.rule,
                          generated_text=gen.text, n_prompt_tokens=gen.n_prompt_tokens, extra=extra))
    return out
