"""Prompt -> token ids for the local backend, shared by every call (so all methods tokenise identically).

Completion prompts are encoded with the tokenizer's special tokens (BOS). Chat prompts are rendered with
`tokenizer.apply_chat_template(..., add_generation_prompt=True)` plus the prompt's assistant prefix, and
encoded without adding special tokens again (the template already starts with BOS).

Continuations follow lm-evaluation-harness: trailing whitespace of the context moves to the front of the
continuation, the whole string is encoded once, and the continuation is what lies past the context's own
token count (`whole[len(encode(context)):]`), so a continuation never re-tokenises the context.
"""
from __future__ import annotations

from typing import Any, Sequence

from mcqa_toolkit.backends.base import split_trailing_space
from mcqa_toolkit.backends.hf.loading import LM


def prompt_text(lm: LM, prompt: Any) -> tuple[str, bool]:
    """(text, add_special_tokens) for a Prompt: its completion text, or its chat rendering when it has messages."""
    if getattr(prompt, "messages", None):
        tok = lm.tokenizer
        if tok.chat_template is None:
            raise ValueError(f"model {lm.name!r} has no chat template; use a strategy with chat=False")
        text = tok.apply_chat_template(list(prompt.messages), add_generation_prompt=True, tokenize=False)
        return text + (prompt.assistant_prefix or ""), False
    return prompt.text, True


def encode(lm: LM, text: str, add_special_tokens: bool = True) -> tuple[int, ...]:
    return tuple(lm.tokenizer(text, add_special_tokens=add_special_tokens).input_ids)


def context_continuation(lm: LM, context: str, continuation: str, add_special_tokens: bool = True
                         ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Token ids of (context, continuation), split the lm-evaluation-harness way."""
    context, continuation = split_trailing_space(context, continuation)
    ctx = encode(lm, context, add_special_tokens)
    whole = encode(lm, context + continuation, add_special_tokens)
    cont = whole[len(ctx):]
    if not cont:
        raise ValueError(f"continuation {continuation!r} encodes to no tokens after its context")
    return ctx, cont


def next_token_candidates(lm: LM, context_ids: Sequence[int], context: str, continuations: Sequence[str],
                          add_special_tokens: bool = True) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """The single token each continuation (e.g. 'A' after 'Answer: (' or ' A' after 'Resposta:') starts with.

    Uses the tokenisation of context + continuation so ' A' vs 'A' is decided by the tokenizer, not by us.
    Returns the ids and, per continuation, whether it encoded to exactly that one token in context (False
    means the letter merged with context or spans several tokens; its first token is used and flagged).
    """
    ids, exact = [], []
    n = len(context_ids)
    for cont in continuations:
        whole = encode(lm, context + cont, add_special_tokens)
        if tuple(whole[:n]) == tuple(context_ids) and len(whole) == n + 1:
            ids.append(whole[n]), exact.append(True)
        else:
            alone = encode(lm, cont, False)
            ids.append(alone[0]), exact.append(False)
    if len(set(ids)) != len(ids):
        raise ValueError(f"option letters {list(continuations)} map to non-distinct tokens {ids}")
    return tuple(ids), tuple(exact)


def shared_prefix_ids(lm: LM, prompt: Any, min_tokens: int = 16) -> tuple[int, ...]:
    """Token ids of the run-level prefix a prompt shares with the rest of its run (KV cache reused across items).

    Completion prompts declare it (`prompt.shared_prefix`: instruction + few-shot block). When it tokenises to
    a true prefix of the full prompt it is used whole; when the boundary merges into one token, the common
    token prefix of both is used if it has at least `min_tokens`. Chat prompts share nothing at this level.
    Stateless, so the sharing (and its float rounding) never depends on which items ran before.
    """
    declared = getattr(prompt, "shared_prefix", "")
    if not declared or getattr(prompt, "messages", None):
        return ()
    text, special = prompt_text(lm, prompt)
    ids = encode(lm, text, special)
    pre = encode(lm, declared, special)
    if len(pre) < len(ids) and ids[: len(pre)] == pre:
        return pre
    n = 0
    for a, b in zip(ids, pre):
        if a != b:
            break
        n += 1
    return ids[:n] if n >= min_tokens and n < len(ids) else ()
