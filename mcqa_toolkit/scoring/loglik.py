"""Option log-likelihood scoring (and cloze), with the usual normalisations, plus per-token log-probs of a text.

Each option's text is scored as a continuation of the prompt (the backend splits context and continuation,
for the local model the lm-evaluation-harness way). Normalisations of the summed log-likelihood L:
  sum   L                                  token  L / number of continuation tokens
  char  L / len(continuation) in characters  byte   L / len(continuation.encode('utf-8'))
  pmi   L - L(option | neutral context)    (Holtzman et al. 2021: removes the option's prior frequency)
The raw sums and lengths are kept in every record so any normalisation can be recomputed afterwards.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mcqa_toolkit.backends.base import Backend, Continuation
from mcqa_toolkit.scoring.scored import Scored, argmax_choice, to_original

# defined here, not imported from records.columns (which re-exports it): importing run/ from here would make
# `import mcqa_toolkit.scoring.loglik` circular (run -> runner -> scoring.loglik)
NORMALIZATIONS = ("sum", "token", "char", "byte", "pmi")


def normalize(sums: np.ndarray, n_tokens: np.ndarray, n_chars: np.ndarray, n_bytes: np.ndarray,
              normalization: str, neutral: np.ndarray | None = None) -> np.ndarray:
    """Apply one normalisation to arrays of summed log-likelihoods (pure; vectorised)."""
    if normalization == "sum":
        return sums
    if normalization == "token":
        return sums / n_tokens
    if normalization == "char":
        return sums / n_chars
    if normalization == "byte":
        return sums / n_bytes
    if normalization == "pmi":
        if neutral is None:
            raise ValueError("normalization 'pmi' needs the neutral-context log-likelihoods")
        return sums - neutral
    raise ValueError(f"normalization {normalization!r} not in {NORMALIZATIONS}")


def score_loglik(backend: Backend, prompts: Sequence[Any], normalization: str = "sum") -> list[Scored]:
    """Score every option continuation of every prompt of one item in one backend call."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization {normalization!r} not in {NORMALIZATIONS}")
    results = backend.loglikelihoods([Continuation(p, c) for p in prompts for c in p.continuations])
    neutral_sums = None
    if normalization == "pmi":
        neutral = backend.loglikelihoods([Continuation(p.neutral_context, c) for p in prompts for c in p.continuations])
        neutral_sums = np.array([r.logprobs.sum() for r in neutral])
    out, k = [], 0
    for p in prompts:
        n = len(p.continuations)
        part = results[k:k + n]
        sums = np.array([r.logprobs.sum() for r in part])
        n_tok = np.array([r.n_tokens for r in part], dtype=float)
        n_chr = np.array([len(r.text) for r in part], dtype=float)
        n_byt = np.array([len(r.text.encode("utf-8")) for r in part], dtype=float)
        neutral_part = neutral_sums[k:k + n] if neutral_sums is not None else None
        scores = to_original(normalize(sums, n_tok, n_chr, n_byt, normalization, neutral_part), p.permutation)
        extra = {"loglik_sum": to_original(sums, p.permutation).tolist(),
                 "n_tokens": to_original(n_tok, p.permutation).astype(int).tolist(),
                 "n_chars": to_original(n_chr, p.permutation).astype(int).tolist(),
                 "n_bytes": to_original(n_byt, p.permutation).astype(int).tolist()}
        if neutral_part is not None:
            extra["loglik_neutral"] = to_original(neutral_part, p.permutation).tolist()
        n_prompt = sum(r.n_context_tokens + r.n_tokens for r in part)
        out.append(Scored(option_scores=scores, choice=argmax_choice(scores), n_prompt_tokens=int(n_prompt),
                          extra=extra))
        k += n
    return out


def text_logprobs(backend: Backend, texts: Sequence[str]) -> list[np.ndarray]:
    """Log-probability of each token of each text given the tokens before it, from the start of a document
    (for the local model: BOS as the only context; without BOS the first token is unscored).
    Input to Min-K% prob (`scoring.min_k.min_k_prob`)."""
    return [r.logprobs for r in backend.loglikelihoods([Continuation("", t) for t in texts])]
