"""The table of methods: for each way of reading a model's answer, what it needs from a backend, whether its
prompt shows the lettered options, what it costs, and which scorer turns backend output into `Scored`.

Everything that depends on a method reads this table and nothing else: the dispatcher (run.dispatch) calls
`METHODS[m].score`, `check_method` refuses a backend that lacks the capability, the grid (run.grid) orders
runs by `cost`, Strategy and the record columns take their vocabularies from it (`METHOD_NAMES`,
`NORMALIZATIONS`). Min-K% prob is a measurement, not an answer method, and has its own `Need` (MIN_K).

    first_token  log P(letter) at the answer slot (ENEM paper A.4)            needs next-token log-probs
    loglik       log-likelihood of each option's text after the prompt        needs continuation log-probs
    cloze        loglik with the options hidden (the stem is completed)       needs continuation log-probs
    generate     the model writes; the extraction cascade reads the answer    needs generation
    cot          the model reasons, then answers ("Resposta: X"); the final    needs generation
                 answer is read, never a letter inside the reasoning
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcqa_toolkit.backends.base import Backend, CapabilityError
from mcqa_toolkit.scoring.first_token import score_first_token
from mcqa_toolkit.scoring.generate import score_generate
from mcqa_toolkit.scoring.loglik import NORMALIZATIONS, score_loglik
from mcqa_toolkit.scoring.scored import Scored

__all__ = ["Need", "Method", "METHODS", "METHOD_NAMES", "MIN_K", "NORMALIZATIONS", "check_method", "check_need",
           "generates", "record_cost"]

# score(backend, prompts, settings, language, seeds): settings is the run's Strategy (read: normalization,
# max_new_tokens, temperature, stop); seeds are one per prompt (sampling); language picks the extraction rules
Scorer = Callable[[Backend, Sequence[Any], Any, "str | None", Sequence[int]], list[Scored]]


@dataclass(frozen=True)
class Need:
    """A backend capability (a `Capabilities` field), why a backend without it cannot serve, and what to use."""

    capability: str
    missing: str
    instead: str


@dataclass(frozen=True)
class Method:
    """One answer method. `shows_options`: True = the prompt letters the options; False = hidden (cloze);
    None = the template style decides. `cost`: relative wall time of one record (item x shuffle), measured
    on Gemma-3-270M on 2 CPU cores with the demo's strategies; a generating method costs `cost` per new token."""

    name: str
    need: Need
    shows_options: bool | None
    normalized: bool
    cost: float
    per_new_token: bool
    score: Scorer


def _first_token(backend: Backend, prompts: Sequence[Any], settings: Any, language: str | None,
                 seeds: Sequence[int]) -> list[Scored]:
    return score_first_token(backend, prompts)


def _loglik(backend: Backend, prompts: Sequence[Any], settings: Any, language: str | None,
            seeds: Sequence[int]) -> list[Scored]:
    return score_loglik(backend, prompts, settings.normalization)


def _generate(backend: Backend, prompts: Sequence[Any], settings: Any, language: str | None,
              seeds: Sequence[int]) -> list[Scored]:
    return score_generate(backend, prompts, language=language, max_new_tokens=settings.max_new_tokens,
                          temperature=settings.temperature, stop=settings.stop, seeds=seeds)


def _cot(backend: Backend, prompts: Sequence[Any], settings: Any, language: str | None,
         seeds: Sequence[int]) -> list[Scored]:
    return score_generate(backend, prompts, language=language, max_new_tokens=settings.max_new_tokens,
                          temperature=settings.temperature, stop=settings.stop, seeds=seeds, final=True)


_NEXT_TOKEN = Need("next_token_logprobs", "it exposes no next-token log-probabilities", "method='generate'")
_ECHO = "it cannot return log-probabilities of given text (no echo)"
# Cloze scores every token of every option (an LM-head call per token); generation costs ~1.2 units per token.
METHODS: dict[str, Method] = {m.name: m for m in (
    Method("first_token", _NEXT_TOKEN, True, False, 12.0, False, _first_token),
    Method("loglik", Need("continuation_logprobs", _ECHO, "method='first_token' or method='generate'"),
           None, True, 17.0, False, _loglik),
    Method("cloze", Need("continuation_logprobs", _ECHO, "method='generate'"), False, True, 17.0, False, _loglik),
    Method("generate", Need("generate", "it cannot generate text", "method='first_token' or 'loglik'"),
           True, False, 1.2, True, _generate),
    Method("cot", Need("generate", "it cannot generate text", "method='first_token' or 'loglik'"),
           True, False, 1.2, True, _cot),
)}
METHOD_NAMES = tuple(METHODS)
MIN_K = Need("continuation_logprobs", _ECHO, "min_k: false")
MIN_K_COST = 24.0  # per item, in the units of Method.cost


def generates(method: str) -> bool:
    """Whether `method` reads a written answer (generate, cot) rather than log-probs."""
    return METHODS[method].need.capability == "generate"


def record_cost(method: str, max_new_tokens: int) -> float:
    """Relative cost of one record under `method` (for ordering runs only)."""
    m = METHODS[method]
    return m.cost * (max_new_tokens if m.per_new_token else 1)


def check_need(backend: Backend, need: Need, what: str) -> None:
    """Raise CapabilityError, in one sentence, when `backend` lacks `need` for `what`."""
    if not getattr(backend.capabilities, need.capability):
        raise CapabilityError(f"backend {backend.name!r} cannot score {what}: {need.missing}; use {need.instead}")


def check_method(backend: Backend, method: str, chat: bool = False) -> None:
    """Refuse, before any work and in one sentence, a method (and chat formatting) the backend cannot serve."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {sorted(METHODS)}")
    check_need(backend, METHODS[method].need, method)
    caps = backend.capabilities
    if chat and not caps.chat:
        raise CapabilityError(f"backend {backend.name!r} cannot render chat prompts; use a strategy with chat=False")
    if chat and not generates(method) and not caps.chat_scoring:
        raise CapabilityError(f"backend {backend.name!r} cannot score {method} on chat prompts (log-probs of a "
                              "chat-rendered prompt); use chat=False or method='generate'")
