"""Prompt -> token ids for the local backend, shared by every call (so all methods tokenise identically).

Completion prompts are encoded with the tokenizer's special tokens (BOS). Chat prompts are rendered with
`tokenizer.apply_chat_template(..., add_generation_prompt=True)` plus the prompt's assistant prefix, and
encoded without adding special tokens again (the template already starts with BOS).

Continuations follow lm-evaluation-harness: trailing whitespace of the context moves to the front of the
continuation, the whole string is encoded once, and the continuation is what lies past the context's own
token count (`whole[len(encode(context)):]`), so a continuation never re-tokenises the context.

Tokenising is a visible cost at exam prompt lengths (an item's 30 shuffles x 6 texts of ~6,000 characters),
so the batch helpers (`letter_requests`, `context_continuations`) encode all of a call's texts in one
tokenizer call and each distinct context once; they give exactly the ids of the one-at-a-time functions. Given
a backend's `TokenCache` (`cache`, segments.py), every function here encodes only the pieces of text it has not
seen before (the few-shot block once per run, a stem once per item), with the same ids.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from mcqa_toolkit.backends.hf.segments import TokenCache
from mcqa_toolkit.prompts.builder import move_trailing


class Tokenized(Protocol):
    """What this module needs of a model (a loading.LM, or vLLM's stand-in): its tokenizer and name."""

    @property
    def tokenizer(self) -> Any: ...

    @property
    def name(self) -> str: ...


def prompt_text(lm: Tokenized, prompt: Any) -> tuple[str, bool]:
    """(text, add_special_tokens) for a Prompt: its completion text, or its chat rendering when it has messages."""
    if getattr(prompt, "messages", None):
        tok = lm.tokenizer
        if tok.chat_template is None:
            raise ValueError(f"model {lm.name!r} has no chat template; use a strategy with chat=False")
        text = tok.apply_chat_template(list(prompt.messages), add_generation_prompt=True, tokenize=False)
        return text + (prompt.assistant_prefix or ""), False
    return prompt.text, True


def encode(lm: Tokenized, text: str, add_special_tokens: bool = True, cache: TokenCache | None = None
           ) -> tuple[int, ...]:
    if cache is not None:
        return cache.encode(text, add_special_tokens)
    return tuple(lm.tokenizer(text, add_special_tokens=add_special_tokens).input_ids)


def encode_batch(lm: Tokenized, texts: Sequence[str], add_special_tokens: bool = True, cache: TokenCache | None = None
                 ) -> list[tuple[int, ...]]:
    """Token ids of several texts in one tokenizer call: the same ids as one call each, but a fast tokenizer
    encodes a batch on all cores (Gemma's BPE treats a whole prompt as one word: ~1 MB/s per core). With `cache`,
    only the segments of text it has not seen are encoded."""
    if not texts:
        return []
    if cache is not None:
        return cache.encode_batch(texts, add_special_tokens)
    return [tuple(x) for x in lm.tokenizer(list(texts), add_special_tokens=add_special_tokens).input_ids]


Tails = list[tuple[int, tuple[int, ...]]]  # per suffix (n, tail): the ids of text + suffix are text_ids[:n] + tail


def extensions(lm: Tokenized, texts: Sequence[str], suffixes: Sequence[Sequence[str]], add_special_tokens: bool = True,
               cache: TokenCache | None = None) -> list[tuple[tuple[int, ...], Tails]]:
    """Per text: its ids and, per suffix, the ids of text + suffix as (n, tail) = text_ids[:n] + tail (segments.py:
    with `cache`, only the text's last segment is encoded again with each suffix; without, every text + suffix
    whole, n = 0)."""
    if cache is not None:
        return cache.encode_extensions(texts, suffixes, add_special_tokens)
    ids = encode_batch(lm, texts, add_special_tokens)
    wholes = iter(encode_batch(lm, [t + x for t, xs in zip(texts, suffixes, strict=True) for x in xs],
                               add_special_tokens))
    return [(i, [(0, next(wholes)) for _ in xs]) for i, xs in zip(ids, suffixes, strict=True)]


def context_continuation(lm: Tokenized, context: str, continuation: str, add_special_tokens: bool = True
                         ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Token ids of (context, continuation), split the lm-evaluation-harness way."""
    return context_continuations(lm, [(context, continuation)], add_special_tokens)[0]


def context_continuations(lm: Tokenized, pairs: Sequence[tuple[str, str]], add_special_tokens: bool = True,
                          cache: TokenCache | None = None) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """`context_continuation` for many pairs in two tokenizer calls; each distinct context is encoded once
    (an item's options share their prompt), and with `cache` each whole text as an extension of its context."""
    split = [move_trailing(c, x) for c, x in pairs]
    index: dict[str, int] = {}
    suffixes: list[list[str]] = []
    where = []
    for c, x in split:
        k = index.setdefault(c, len(index))
        if k == len(suffixes):
            suffixes.append([])
        where.append((k, len(suffixes[k])))
        suffixes[k].append(x)
    ext = extensions(lm, list(index), suffixes, add_special_tokens, cache)
    out = []
    for (_, continuation), (k, j) in zip(split, where, strict=True):
        ctx, tails = ext[k]
        n, tail = tails[j]
        cont = tail[len(ctx) - n:]  # (ctx[:n] + tail)[len(ctx):], the lm-evaluation-harness split
        if not cont:
            raise ValueError(f"continuation {continuation!r} encodes to no tokens after its context")
        out.append((ctx, cont))
    return out


def continuation_requests(lm: Tokenized, requests: Sequence[Any], cache: TokenCache | None = None
                          ) -> list[tuple[tuple[int, ...], int, str]]:
    """Per Continuation request: (token ids of context + continuation, number of context tokens, the continuation
    as scored, i.e. with the context's trailing whitespace moved to its front), split the lm-evaluation-harness
    way with one batch of tokenizer calls per special-token mode. A context with no token (no BOS and an empty
    text) lends it the continuation's first token, which is then not scored; a continuation left with no token
    is a ValueError. Used by every local backend (hf, vLLM), so both score exactly the same tokens."""
    rendered = [(r.context, True) if isinstance(r.context, str) else prompt_text(lm, r.context) for r in requests]
    split: list = [None] * len(requests)
    for special in {sp for _, sp in rendered}:
        idx = [i for i, (_, sp) in enumerate(rendered) if sp == special]
        pairs = context_continuations(lm, [(rendered[i][0], requests[i].continuation) for i in idx], special, cache)
        for i, pair in zip(idx, pairs, strict=True):
            split[i] = pair
    out = []
    for r, (text, _), (ctx, cont) in zip(requests, rendered, split, strict=True):
        if not ctx:
            ctx, cont = cont[:1], cont[1:]
            if not cont:
                raise ValueError(f"text {r.continuation[:40]!r} has no token to score")
        out.append((tuple(ctx) + tuple(cont), len(ctx), move_trailing(text, r.continuation)[1]))
    return out


def _first_tokens(lm: Tokenized, context_ids: Sequence[int], tails: Tails, continuations: Sequence[str]
                  ) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """Per continuation, the token after the context in context + continuation (`tails`: its ids as
    context_ids[:m] + tail) when that whole is the context's ids plus exactly one token; else the continuation's
    own first token, flagged not exact."""
    ids: list[int] = []
    exact: list[bool] = []
    n = len(context_ids)
    for cont, (m, tail) in zip(continuations, tails, strict=True):
        if m + len(tail) == n + 1 and tuple(tail[: n - m]) == tuple(context_ids[m:]):
            ids.append(tail[-1])
            exact.append(True)
        else:
            alone = encode(lm, cont, False)
            ids.append(alone[0])
            exact.append(False)
    if len(set(ids)) != len(ids):
        raise ValueError(f"option letters {list(continuations)} map to non-distinct tokens {ids}")
    return tuple(ids), tuple(exact)


def next_token_candidates(lm: Tokenized, context_ids: Sequence[int], context: str, continuations: Sequence[str],
                          add_special_tokens: bool = True) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    """The single token each continuation (e.g. 'A' after 'Answer: (' or ' A' after 'Resposta:') starts with.

    Uses the tokenisation of context + continuation so ' A' vs 'A' is decided by the tokenizer, not by us.
    Returns the ids and, per continuation, whether it encoded to exactly that one token in context (False
    means the letter merged with context or spans several tokens; its first token is used and flagged).
    """
    wholes = encode_batch(lm, [context + c for c in continuations], add_special_tokens)
    return _first_tokens(lm, context_ids, [(0, w) for w in wholes], continuations)


def letter_requests(lm: Tokenized, prompts: Sequence[Any], cache: TokenCache | None = None
                    ) -> list[tuple[tuple[int, ...], tuple[int, ...], tuple[bool, ...]]]:
    """Per prompt: (token ids, letter candidate ids, exact flags), as `encode` + `next_token_candidates` give,
    with every text of the batch (prompts and prompt + letter) encoded in one tokenizer call per mode (with `cache`,
    prompt + letter as an extension of the prompt)."""
    rendered = [prompt_text(lm, p) for p in prompts]
    out: list = [None] * len(prompts)
    for special in {sp for _, sp in rendered}:
        idx = [i for i, (_, sp) in enumerate(rendered) if sp == special]
        conts = [list(prompts[i].letter_continuations) for i in idx]
        ext = extensions(lm, [rendered[i][0] for i in idx], conts, special, cache)
        for i, (text_ids, tails), cs in zip(idx, ext, conts, strict=True):
            cands, exact = _first_tokens(lm, text_ids, tails, cs)
            out[i] = (text_ids, cands, exact)
    return out


def shared_prefix_ids(lm: Tokenized, prompt: Any, ids: Sequence[int] | None = None, min_tokens: int = 16,
                      cache: TokenCache | None = None) -> tuple[int, ...]:
    """Token ids of the run-level prefix a prompt shares with the rest of its run (KV cache reused across items).

    Completion prompts declare it (`prompt.shared_prefix`: instruction + few-shot block). When it tokenises to
    a true prefix of the full prompt it is used whole; when the boundary merges into one token, the common
    token prefix of both is used if it has at least `min_tokens`. Chat prompts share nothing at this level.
    Stateless, so the sharing (and its float rounding) never depends on which items ran before. `ids`: the
    prompt's own token ids when the caller has them (they are not encoded again); `cache`: the backend's TokenCache.
    """
    declared = getattr(prompt, "shared_prefix", "")
    if not declared or getattr(prompt, "messages", None):
        return ()
    text, special = prompt_text(lm, prompt)
    ids = tuple(ids) if ids is not None else encode(lm, text, special, cache)
    pre = encode(lm, declared, special, cache)
    if len(pre) < len(ids) and ids[: len(pre)] == pre:
        return pre
    n = 0
    for a, b in zip(ids, pre, strict=True):
        if a != b:
            break
        n += 1
    return ids[:n] if n >= min_tokens and n < len(ids) else ()
