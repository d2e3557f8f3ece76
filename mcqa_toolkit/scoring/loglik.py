"""Option log-likelihood scoring (and cloze), with the usual normalisations, plus per-token log-probs.

Each option's text is scored as a continuation of the prompt, split into context/continuation tokens the
lm-evaluation-harness way (see encode.py). Normalisations of the summed log-likelihood L of an option:
  sum   L                                  token  L / number of continuation tokens
  char  L / len(continuation) in characters  byte   L / len(continuation.encode('utf-8'))
  pmi   L - L(option | neutral context)    (Holtzman et al. 2021: removes the option's prior frequency)
The raw sums and lengths are kept in every record so any normalisation can be recomputed afterwards.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from mcqa_toolkit.models.hf import LM
from mcqa_toolkit.schema import NORMALIZATIONS
from mcqa_toolkit.scoring.encode import context_continuation, encode, prompt_text, split_trailing_space
from mcqa_toolkit.scoring.first_token import Scored, argmax_choice, to_original
from mcqa_toolkit.scoring.prefix import PrefixScorer, Request



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


def score_loglik(lm: LM, scorer: PrefixScorer, prompts: Sequence[Any], normalization: str = "sum",
                 shared_prefix: Sequence[int] = ()) -> list[Scored]:
    """Score every option continuation of every prompt of one item in one engine call."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization {normalization!r} not in {NORMALIZATIONS}")
    reqs, meta = [], []
    for p in prompts:
        text, special = prompt_text(lm, p)
        for cont in p.continuations:
            ctx, cont_ids = context_continuation(lm, text, cont, special)
            reqs.append(Request(ctx + cont_ids, len(ctx)))
            cont_text = split_trailing_space(text, cont)[1]
            meta.append((len(cont_ids), len(cont_text), len(cont_text.encode("utf-8")), len(ctx) + len(cont_ids)))
    logps = scorer.score(reqs, shared_prefix)
    neutral_sums = None
    if normalization == "pmi":
        nreqs = []
        for p in prompts:
            for cont in p.continuations:
                ctx, cont_ids = context_continuation(lm, p.neutral_context, cont, True)
                nreqs.append(Request(ctx + cont_ids, len(ctx)))
        neutral_sums = np.array([x.sum() for x in scorer.score(nreqs)])
    out, k = [], 0
    for p in prompts:
        n = len(p.continuations)
        sums = np.array([x.sum() for x in logps[k:k + n]])
        n_tok, n_chr, n_byt, n_all = (np.array(v, dtype=float) for v in zip(*meta[k:k + n]))
        neutral = neutral_sums[k:k + n] if neutral_sums is not None else None
        shown = normalize(sums, n_tok, n_chr, n_byt, normalization, neutral)
        scores = to_original(shown, p.permutation)
        extra = {"loglik_sum": to_original(sums, p.permutation).tolist(),
                 "n_tokens": to_original(n_tok, p.permutation).astype(int).tolist(),
                 "n_chars": to_original(n_chr, p.permutation).astype(int).tolist(),
                 "n_bytes": to_original(n_byt, p.permutation).astype(int).tolist()}
        if neutral is not None:
            extra["loglik_neutral"] = to_original(neutral, p.permutation).tolist()
        out.append(Scored(option_scores=scores, choice=argmax_choice(scores), n_prompt_tokens=int(n_all.sum()),
                          extra=extra))
        k += n
    return out


def token_logprobs(lm: LM, text: str, scorer: PrefixScorer | None = None) -> np.ndarray:
    """Log-probability of each token of `text` given the tokens before it (BOS as the only context).

    With a BOS token every text token is scored (the first one given BOS only); a tokenizer without BOS
    leaves the first token unscored. Input to Min-K% prob (`stats.min_k_prob`).
    """
    ids = encode(lm, text, True)
    if len(ids) < 2:
        raise ValueError(f"text {text[:40]!r} has no token to score")
    eng = scorer or PrefixScorer(lm)
    return eng.score([Request(ids, 1)])[0]
