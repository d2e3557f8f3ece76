"""Scoring the question types beyond single choice through a Backend: generation read by `responses.py` (also
single choice with structured output), and the no-generation yes/no path of log-prob strategies.

Generation: one backend call for the block; each output is read by its item's type and mapped back to
ORIGINAL options through the prompt's permutation (multi), so shuffles line up. `option_scores` are 1/0 on
the chosen options (NaN when nothing was read; NaN for true/false and short answers, which have no options
to score).

Yes/no: every shown option (multi) or statement (truefalse) is its own question, and P(yes) =
softmax(log P(yes_word), log P(no_word)) from next-token log-probs (first_token) or continuation
log-likelihoods (loglik / cloze). The rule is YES_NO_RULE: an option is chosen / a statement is True when
P(yes) >= 0.5; a multi item with no option chosen is unanswered. P(yes) per option is the multi record's
option_scores; per statement it is kept in `extra["p_true"]`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mcqa_toolkit.backends.base import Backend, Continuation
from mcqa_toolkit.items import Item
from mcqa_toolkit.prompts.types import question_kind
from mcqa_toolkit.scoring.reasoning import split_reasoning
from mcqa_toolkit.scoring.responses import Reading, read_response
from mcqa_toolkit.scoring.scored import Scored

__all__ = ["score_typed_generate", "score_yes_no", "YES_NO_THRESHOLD", "YES_NO_RULE"]

YES_NO_THRESHOLD = 0.5
YES_NO_RULE = f"yes_no_p>={YES_NO_THRESHOLD}"


def _n_statements(item: Item) -> int:
    return len(item.answer) if isinstance(item.answer, tuple) else len(item.meta.get("statements") or ())


def _from_reading(item: Item, prompt: Any, value: Any) -> tuple[int, Any, np.ndarray]:
    """(choice, response in original terms, option_scores) from a reading's shown-terms value."""
    n = item.n_options
    kind, _ = question_kind(item)
    if value is None:
        return -1, None, np.full(n, np.nan)
    if item.answer_type == "single":
        choice = int(prompt.permutation[value])
        scores = np.zeros(n)
        scores[choice] = 1.0
        return choice, None, scores
    if item.answer_type == "multi":
        chosen = sorted(int(prompt.permutation[pos]) for pos in value)
        scores = np.zeros(n)
        scores[chosen] = 1.0
        return -1, chosen, scores
    if kind in ("single", "multi"):  # letter-keyed short item: options stay in the stem, never shuffled
        return -1, [value] if kind == "single" else list(value), np.full(n, np.nan)
    return -1, list(value) if kind == "truefalse" else value, np.full(n, np.nan)


def score_typed_generate(backend: Backend, items: Sequence[Item], prompts: Sequence[Any], *,
                         language: str | None = None, max_new_tokens: int = 64, temperature: float = 0.0,
                         stop: Sequence[str] = ("\n\n",), seeds: Sequence[int] | None = None) -> list[Scored]:
    """Generate an answer for each prompt (`items[i]` is the item of `prompts[i]`) and read it by type."""
    gens = backend.generate(prompts, max_new_tokens=max_new_tokens, temperature=temperature, stop=stop, seeds=seeds)
    out = []
    for item, p, gen in zip(items, prompts, gens, strict=True):
        kind, letters = question_kind(item)
        thinking, answer, complete = split_reasoning(gen.text, gen.reasoning)  # never read the thinking
        reading = read_response(answer, kind, letters=letters or "A", n_statements=_n_statements(item),
                                language=language) if complete else Reading(None, "think_unclosed", "unanswered",
                                                                            "the model never finished thinking")
        choice, response, scores = _from_reading(item, p, reading.value)
        extra = {"n_generated_tokens": gen.n_generated_tokens, "finish_reason": gen.finish_reason}
        if thinking:
            extra["reasoning"] = thinking
        if reading.reason:
            extra["reason"] = reading.reason
        if reading.explanation:
            extra["explanation"] = reading.explanation
        out.append(Scored(option_scores=scores, choice=choice, status=reading.status,
                          extraction_rule=reading.rule, generated_text=gen.text, n_prompt_tokens=gen.n_prompt_tokens,
                          extra=extra, response=response))
    return out


def _p_yes(backend: Backend, prompts: Sequence[Any], method: str) -> tuple[np.ndarray, list[int]]:
    """P(yes) for each yes/no prompt and its prompt token count, in one backend call."""
    if method == "first_token":
        res = backend.letter_logprobs(prompts)
        pairs = np.array([r.logprobs for r in res], dtype=float)
        n_tokens = [r.n_prompt_tokens for r in res]
    else:
        conts = backend.loglikelihoods([Continuation(p, c) for p in prompts for c in p.continuations])
        pairs = np.array([r.logprobs.sum() for r in conts], dtype=float).reshape(len(prompts), 2)
        n_tokens = [conts[2 * i].n_context_tokens for i in range(len(prompts))]
    yes, no = pairs[:, 0], pairs[:, 1]
    with np.errstate(over="ignore", invalid="ignore"):
        p = 1.0 / (1.0 + np.exp(np.where(np.isnan(no), -np.inf, no) - np.where(np.isnan(yes), -np.inf, yes)))
    return np.where(np.isnan(yes) & np.isnan(no), np.nan, p), n_tokens


def score_yes_no(backend: Backend, item: Item, prompt_groups: Sequence[Sequence[Any]], method: str) -> list[Scored]:
    """One Scored per shuffle of a multi / truefalse item; `prompt_groups[k]` are shuffle k's yes/no prompts
    (prompts.render_yes_no), all scored in one backend call."""
    if method not in ("first_token", "loglik", "cloze"):
        raise ValueError(f"the yes/no path scores log-probs; method {method!r} generates")
    flat = [p for group in prompt_groups for p in group]
    p_yes, n_tokens = _p_yes(backend, flat, method)
    out, k = [], 0
    for group in prompt_groups:
        p, toks = p_yes[k:k + len(group)], sum(n_tokens[k:k + len(group)])
        k += len(group)
        extra: dict[str, Any] = {"p_yes_threshold": YES_NO_THRESHOLD}
        if np.isnan(p).any():
            out.append(Scored(np.full(item.n_options, np.nan), -1, "unanswered", "none", n_prompt_tokens=toks,
                              extra={**extra, "reason": "yes/no log-probs not visible"}))
            continue
        if item.answer_type == "multi":
            perm = np.asarray(group[0].permutation)
            scores = np.empty(item.n_options)
            scores[perm] = p
            chosen = sorted(int(o) for o in perm[p >= YES_NO_THRESHOLD])
            status = "answered" if chosen else "unanswered"
            if not chosen:
                extra["reason"] = f"no option reached P(yes) >= {YES_NO_THRESHOLD}"
            out.append(Scored(scores, -1, status, YES_NO_RULE if chosen else "none", n_prompt_tokens=toks,
                              extra=extra, response=chosen or None))
        else:
            out.append(Scored(np.full(item.n_options, np.nan), -1, "answered", YES_NO_RULE, n_prompt_tokens=toks,
                              extra={**extra, "p_true": p.tolist()},
                              response=[bool(x >= YES_NO_THRESHOLD) for x in p]))
    return out
