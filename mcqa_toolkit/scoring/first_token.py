"""First-token letter scoring: log P(letter | prompt ending in the answer cue), as in the ENEM paper (A.4).

The backend decides which token a letter is (for the local model: whatever the tokenizer makes of
cue + letter, 'A' after 'Answer: (' but ' A' after 'Resposta:'; Gemma's ids differ: 'A' = 236776,
' A' = 562), so the score is for the exact text a model would emit; what it used is kept in `extra`.
A letter the backend cannot see (outside an API's top-k) is NaN and never chosen.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcqa_toolkit.backends.base import Backend
from mcqa_toolkit.scoring.scored import Scored, argmax_choice, to_original


def score_first_token(backend: Backend, prompts: Sequence[Any]) -> list[Scored]:
    """Score every prompt of one item (all shuffles) in one backend call so the stem is shared."""
    out = []
    for p, res in zip(prompts, backend.letter_logprobs(prompts), strict=True):
        scores = to_original(res.logprobs, p.permutation)
        out.append(Scored(option_scores=scores, choice=argmax_choice(scores), n_prompt_tokens=res.n_prompt_tokens,
                          extra=res.extra))
    return out
