"""Request bodies and response parsing for OpenAI-compatible servers (pure functions on JSON dicts).

Completions (`/v1/completions`) carry the log-prob methods: letters from the first generated token's top-k
(`max_tokens=1, logprobs=k`), continuations from an echo of the prompt (`echo=True, logprobs=1,
max_tokens=1`; `max_tokens=0` would mean "unlimited" on llama-cpp-python). The echo is split at the
context's end by each token's `text_offset`, never by a local token count; the generated last token starts
at the end of the prompt and so falls outside the continuation. Servers report `text_offset` in characters
(OpenAI, vLLM) or in UTF-8 bytes (some llama.cpp builds); the unit is read off the tokens themselves.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from mcqa_toolkit.backends.base import ContinuationLogprobs, Generation, LetterLogprobs

__all__ = ["letter_body", "echo_body", "generate_body", "parse_letters", "parse_echo", "parse_generation",
           "usage_tokens"]


def letter_body(model: str, text: str, top_k: int) -> dict[str, Any]:
    return {"model": model, "prompt": text, "max_tokens": 1, "logprobs": top_k, "temperature": 0.0, "echo": False}


def echo_body(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "prompt": text, "max_tokens": 1, "logprobs": 1, "temperature": 0.0, "echo": True}


def generate_body(model: str, *, prompt: str | None = None, messages: Sequence[dict[str, str]] | None = None,
                  max_tokens: int, temperature: float, stop: Sequence[str], seed: int | None,
                  extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A completions body (`prompt`) or a chat-completions body (`messages`); a seed only when sampling."""
    body: dict[str, Any] = {"model": model, "max_tokens": int(max_tokens), "temperature": float(temperature)}
    body.update({"prompt": prompt} if messages is None else {"messages": [dict(m) for m in messages]})
    if stop:
        body["stop"] = list(stop)[:4]  # the OpenAI API accepts at most 4 stop sequences
    if temperature > 0 and seed is not None:
        body["seed"] = int(seed) % (2 ** 31)
    return {**body, **(extra or {})}


def _choice(response: dict[str, Any]) -> dict[str, Any]:
    choices = response.get("choices") or []
    if not choices:
        raise ValueError(f"response has no choices: {str(response)[:200]}")
    return choices[0]


def usage_tokens(response: dict[str, Any]) -> tuple[int, int]:
    """(prompt tokens, completion tokens) the server reports (0, 0 when it reports none)."""
    usage = response.get("usage") or {}
    return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)


def parse_letters(response: dict[str, Any] | None, continuations: Sequence[str]) -> LetterLogprobs:
    """Log-prob of each letter continuation (exact token text, e.g. " A") in the first position's top-k;
    a letter outside the top-k is NaN (probability below the k-th token's). None (batch collection) -> NaN."""
    if response is None:
        return LetterLogprobs(np.full(len(continuations), np.nan), 0, {"letters_seen": 0})
    choice = _choice(response)
    logprobs = choice.get("logprobs") or {}
    top_list = logprobs.get("top_logprobs") or []
    if not top_list:  # chat completions: logprobs.content[0].top_logprobs = [{token, logprob}, ...]
        content = logprobs.get("content") or []
        top_list = [{t["token"]: t["logprob"] for t in content[0].get("top_logprobs", [])}] if content else []
    if not top_list or not top_list[0]:
        raise ValueError("the server returned no top log-probabilities for the answer slot")
    top = top_list[0]
    values = np.array([float(top[c]) if c in top else np.nan for c in continuations])
    best = max(top, key=top.get)
    return LetterLogprobs(values, usage_tokens(response)[0],
                          {"letters_seen": int(np.isfinite(values).sum()), "top_k": len(top), "top_token": best})


def parse_echo(response: dict[str, Any] | None, context: str, continuation: str) -> ContinuationLogprobs:
    """Per-token log-probs of the tokens of `continuation` in an echo of context + continuation.

    Tokens are placed by `text_offset` (characters, as the OpenAI API documents it): a token starting in
    [len(context), len(context + continuation)) is the continuation's, and so is a token that starts in the
    context and ends past it (a merge of the boundary); the generated token starts at the prompt's end and
    is left out. A first token without a log-prob (nothing before it) is skipped, as a local model without
    BOS does.
    """
    if response is None:
        return ContinuationLogprobs(np.zeros(1), continuation, 0)
    lp = _choice(response).get("logprobs") or {}
    values, offsets = lp.get("token_logprobs") or [], lp.get("text_offset") or []
    if len(values) != len(offsets) or not values:
        raise ValueError("echo response lacks token_logprobs / text_offset of equal length (server ignored echo?)")
    start, end = len(context), len(context) + len(continuation)
    nxt = list(offsets[1:]) + [None]
    picked, n_context = [], 0
    for value, off, following in zip(values, offsets, nxt):
        if off >= end:
            break  # the generated token
        if off < start and (following is None or following <= start):
            n_context += 1
            continue
        if value is None:
            if picked or off > start:
                raise ValueError(f"echo response has no log-prob at text offset {off} of the continuation")
            continue
        picked.append(float(value))
    if not picked:
        raise ValueError(f"no continuation token found for {continuation[:40]!r} in the echo")
    if not all(math.isfinite(v) and v <= 0 for v in picked):
        raise ValueError("echo log-probs must be finite and <= 0")
    return ContinuationLogprobs(np.array(picked), continuation, n_context)


def parse_generation(response: dict[str, Any] | None, chat: bool) -> Generation:
    """Text (stop strings already removed by the server), token counts and finish reason."""
    if response is None:
        return Generation("", 0, 0, "pending")
    choice = _choice(response)
    text = (choice.get("message") or {}).get("content") if chat else choice.get("text")
    prompt_tokens, completion_tokens = usage_tokens(response)
    return Generation(text or "", prompt_tokens, completion_tokens, choice.get("finish_reason") or "")
