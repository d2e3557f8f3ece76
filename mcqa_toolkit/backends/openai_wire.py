"""Request bodies and response parsing for OpenAI-compatible servers (pure functions on JSON dicts).

Letters come from the first generated token's top-k: on `/v1/completions` (`max_tokens=1, logprobs=k`) where
the server serves the model there, else on chat completions (`logprobs=true, top_logprobs=k`, the prompt as
the user turn: the ENEM paper's GPT-3.5 protocol); k never exceeds the provider's documented maximum
(backends.providers). Continuations come from an echo of the prompt (`echo=True, logprobs=1, max_tokens=1`;
`max_tokens=0` would mean "unlimited" on llama-cpp-python), split by backends.echo. Generation bodies follow
the model's rules: reasoning models get `max_completion_tokens` and no temperature, logprobs or (o3, o4-mini)
stop strings. A reply's reasoning (`message.reasoning` or `reasoning_content`, vLLM's and DeepSeek's fields) and
its reasoning-token count (`usage.completion_tokens_details.reasoning_tokens`) are kept apart from the answer.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mcqa_toolkit.backends.base import Generation, LetterLogprobs
from mcqa_toolkit.backends.echo import parse_echo
from mcqa_toolkit.backends.providers import Profile

__all__ = ["letter_body", "chat_letter_body", "echo_body", "generate_body", "parse_letters", "parse_echo",
           "parse_generation", "usage_tokens", "reasoning_tokens"]


def letter_body(model: str, text: str, top_k: int) -> dict[str, Any]:
    return {"model": model, "prompt": text, "max_tokens": 1, "logprobs": top_k, "temperature": 0.0, "echo": False}


def chat_letter_body(model: str, messages: Sequence[dict[str, str]], top_k: int,
                     extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"model": model, "messages": [dict(m) for m in messages], "max_tokens": 1, "temperature": 0.0,
            "logprobs": True, "top_logprobs": top_k, **(extra or {})}


def echo_body(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "prompt": text, "max_tokens": 1, "logprobs": 1, "temperature": 0.0, "echo": True}


def generate_body(model: str, *, prompt: str | None = None, messages: Sequence[dict[str, str]] | None = None,
                  max_tokens: int, temperature: float, stop: Sequence[str], seed: int | None,
                  extra: dict[str, Any] | None = None, profile: Profile | None = None,
                  reasoning_budget: int = 0) -> dict[str, Any]:
    """A completions body (`prompt`) or a chat-completions body (`messages`) within `profile`'s limits; a seed
    only when sampling. A reasoning model's budget is `max_tokens + reasoning_budget` (its reasoning tokens
    count against it). More stop strings than the provider accepts is an error, never a silent cut."""
    rule = profile.rule if profile is not None else None
    body: dict[str, Any] = {"model": model}
    body.update({"prompt": prompt} if messages is None else {"messages": [dict(m) for m in messages]})
    if rule is not None:
        body[rule.token_param] = int(max_tokens) + (int(reasoning_budget) if rule.token_param != "max_tokens" else 0)
    else:
        body["max_tokens"] = int(max_tokens)
    if rule is None or rule.temperature:
        body["temperature"] = float(temperature)
    limit = profile.provider.max_stop if profile is not None else 4
    if stop and (rule is None or rule.stop):
        if limit is not None and len(stop) > limit:
            name = profile.provider.name if profile is not None else "the OpenAI API"
            raise ValueError(f"{name} accepts at most {limit} stop strings; the strategy has {len(stop)}")
        body["stop"] = list(stop)
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


def reasoning_tokens(response: dict[str, Any]) -> int | None:
    """Reasoning tokens the server reports (OpenAI, DeepSeek: usage.completion_tokens_details), else None."""
    details = (response.get("usage") or {}).get("completion_tokens_details") or {}
    value = details.get("reasoning_tokens")
    return None if value is None else int(value)


def _letter_of(token: str) -> str:
    """A chat reply's first token as a letter: "A", " A", "(A", "**A" all read "A"."""
    return token.strip().lstrip("(*[").strip()


def parse_letters(response: dict[str, Any] | None, continuations: Sequence[str], *,
                  exact: bool = True) -> LetterLogprobs:
    """Log-prob of each letter in the first position's top-k; a letter outside it is NaN (probability below
    the k-th token's). `exact`: the token must be the continuation itself (" A" after "Resposta:"); otherwise
    (a chat reply to a prompt sent as the user turn) every top token that reads as the letter counts ("A", " A",
    "(A"), their probabilities summed. None (batch collection) -> NaN."""
    if response is None:
        return LetterLogprobs(np.full(len(continuations), np.nan), 0, {"letters_seen": 0})
    logprobs = _choice(response).get("logprobs") or {}
    top_list = logprobs.get("top_logprobs") or []
    if not top_list:  # chat completions (and llama-server): logprobs.content[0].top_logprobs = [{token, logprob}]
        content = logprobs.get("content") or []
        top_list = [{t["token"]: t["logprob"] for t in content[0].get("top_logprobs", [])}] if content else []
    if not top_list or not top_list[0]:
        raise ValueError("the server returned no top log-probabilities for the answer slot")
    top = top_list[0]
    if exact:
        values = np.array([float(top[c]) if c in top else np.nan for c in continuations])
    else:
        values = np.array([np.logaddexp.reduce([float(v) for t, v in top.items() if _letter_of(t) == c.strip()])
                           if any(_letter_of(t) == c.strip() for t in top) else np.nan for c in continuations])
    best = max(top, key=top.get)
    return LetterLogprobs(values, usage_tokens(response)[0],
                          {"letters_seen": int(np.isfinite(values).sum()), "top_k": len(top), "top_token": best,
                           "letter_match": "exact" if exact else "stripped"})


def parse_generation(response: dict[str, Any] | None, chat: bool) -> Generation:
    """Text (stop strings already removed by the server), reasoning when the server returns it apart, token
    counts and finish reason."""
    if response is None:
        return Generation("", 0, 0, "pending")
    choice = _choice(response)
    message = choice.get("message") or {}
    text = message.get("content") if chat else choice.get("text")
    reasoning = (message.get("reasoning") or message.get("reasoning_content") or "") if chat else ""
    prompt_tokens, completion_tokens = usage_tokens(response)
    return Generation(text or "", prompt_tokens, completion_tokens, choice.get("finish_reason") or "",
                      reasoning=reasoning, n_reasoning_tokens=reasoning_tokens(response))
