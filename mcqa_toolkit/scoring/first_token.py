"""First-token letter scoring: log P(letter | prompt ending in the answer cue), as in the ENEM paper (A.4).

The letter token is whatever the tokenizer produces for cue + letter ('A' after 'Answer: (', ' A' after
'Resposta:'; Gemma's ids differ: 'A' = 236776, ' A' = 562), so the score is for the exact text a model
would emit. The ids used are recorded with every record.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from mcqa_toolkit.models.hf import LM
from mcqa_toolkit.scoring.encode import encode, next_token_candidates, prompt_text
from mcqa_toolkit.scoring.prefix import PrefixScorer, Request


@dataclass(frozen=True)
class Scored:
    """A method's output for one prompt (one item x shuffle). Scores are in ORIGINAL option order."""

    option_scores: np.ndarray
    choice: int                    # original option index, -1 when unanswered/refused
    status: str = "answered"
    extraction_rule: str = ""
    generated_text: str = ""
    n_prompt_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def to_original(shown: Sequence[float], permutation: Sequence[int]) -> np.ndarray:
    """Reorder per-position values into original option order (permutation[pos] = original index)."""
    out = np.empty(len(permutation), dtype=float)
    out[np.asarray(permutation)] = np.asarray(shown, dtype=float)
    return out


def argmax_choice(scores: np.ndarray) -> int:
    """Highest-scoring original option; -1 if every score is NaN (nothing to choose)."""
    if np.all(np.isnan(scores)):
        return -1
    return int(np.nanargmax(scores))


def first_token_requests(lm: LM, prompt: Any) -> tuple[Request, dict[str, Any]]:
    text, special = prompt_text(lm, prompt)
    ids = encode(lm, text, special)
    cands, exact = next_token_candidates(lm, ids, text, prompt.letter_continuations, special)
    return Request(ids, len(ids), cands), {"letter_token_ids": list(cands), "letter_token_exact": list(exact)}


def score_first_token(lm: LM, scorer: PrefixScorer, prompts: Sequence[Any], shared_prefix: Sequence[int] = ()
                      ) -> list[Scored]:
    """Score every prompt of one item (all shuffles) in one engine call so the stem is shared."""
    built = [first_token_requests(lm, p) for p in prompts]
    results = scorer.score([r for r, _ in built], shared_prefix)
    out = []
    for p, (req, extra), logp in zip(prompts, built, results):
        scores = to_original(logp, p.permutation)
        out.append(Scored(option_scores=scores, choice=argmax_choice(scores), n_prompt_tokens=len(req.tokens),
                          extra=extra))
    return out
