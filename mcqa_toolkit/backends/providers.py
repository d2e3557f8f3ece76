"""What each provider documents it accepts, as data: the one place the backends read limits from.

A model entry of the `openai` backend names its server with `provider:` (openai | vllm | llama_cpp | ollama |
gemini_openai | maritaca | nim | deepseek | compatible); left out, it is inferred from the base URL's host
(api.openai.com -> openai, ...), else `compatible`, whose limits are probed. `profile(provider, model)` turns a
provider's row and the model's rules (reasoning models) into what the backend may send. The stand-in servers
of the tests (tests/fake_openai.py, tests/fake_gemini.py) encode the same documented rules independently, so a
wrong row here fails there. Sources: docs/providers.md ([C] confirmed in official docs or SDK sources, [I] seen
in real error bodies quoted in issues, [U] unconfirmed, chosen conservatively).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

__all__ = ["BatchLimits", "ReasoningRule", "Provider", "Profile", "PROVIDERS", "ANTHROPIC", "ANTHROPIC_NO_PREFILL",
           "ANTHROPIC_NO_TEMPERATURE", "GEMINI", "GEMINI_URL", "provider_for", "profile", "public_url"]


@dataclass(frozen=True)
class BatchLimits:
    """One batch job's documented ceiling: requests and bytes of its input; custom_id's allowed form."""

    max_requests: int | None      # None: not documented (the byte limit binds)
    max_bytes: int
    custom_id: str = r"^[a-zA-Z0-9_-]{1,64}$"


@dataclass(frozen=True)
class ReasoningRule:
    """Models (regex on the model id) that think before answering and reject some sampling parameters."""

    pattern: str
    token_param: str = "max_completion_tokens"   # the output budget's name (reasoning tokens included)
    temperature: bool = False                    # False: temperature is never sent (only the default is allowed)
    logprobs: bool = False                       # False: logprobs/top_logprobs are rejected (letters refused)
    stop: bool = True                            # False: stop sequences are rejected


@dataclass(frozen=True)
class Provider:
    """One row of the table. `completions`: which models /v1/completions serves ("all", "none", or a regex);
    `echo`: prompt log-probs through echo (True, False, None: probed, or a regex of the models that echo);
    `*_logprobs_max`: the largest top-k each endpoint
    accepts (None: not offered; letters are then probed, as for every provider); `max_stop`: stop strings per
    request (None: no documented limit); `run_batch`: no batch API, but `--batch-submit` writes the JSONL that
    `vllm run-batch` reads (chat-completions lines only) and `--batch-fetch` imports its output."""

    name: str
    hosts: tuple[str, ...] = ()
    completions: str = "all"
    completions_logprobs_max: int | None = 20
    chat_logprobs_max: int | None = 20
    echo: bool | str | None = None
    max_stop: int | None = None
    batch: BatchLimits | None = None
    reasoning: tuple[ReasoningRule, ...] = ()
    logprobs_fallback: tuple[int, ...] = ()     # compatible servers: smaller top-k tried when the probe's is refused
    run_batch: bool = False
    history: str | None = None                  # how earlier requests can move a response (run provenance says it)


_OPENAI_REASONING = (
    ReasoningRule(r"^o(3|4-mini)(\b|-)", stop=False),  # "stop: Not supported with latest reasoning models o3, o4-mini"
    ReasoningRule(r"^(o\d|gpt-5)"),                       # o1, o3-mini, gpt-5*: max_completion_tokens, no temperature
)
PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    # gpt-3.5-turbo-instruct rejects echo with logprobs ("invalid_parameter_combination"): only the base models echo
    Provider("openai", ("api.openai.com",), completions=r"^(gpt-3\.5-turbo-instruct|davinci-002|babbage-002)",
             completions_logprobs_max=5, chat_logprobs_max=20, echo=r"^(davinci-002|babbage-002)$", max_stop=4,
             batch=BatchLimits(50_000, 200 * 1024 ** 2), reasoning=_OPENAI_REASONING),
    Provider("vllm", completions_logprobs_max=20, chat_logprobs_max=20, echo=True,    # --max-logprobs (default 20)
             run_batch=True),
    Provider("llama_cpp", echo=None,            # llama-cpp-python echoes; upstream llama-server ignores echo
             history="the server evaluates only the part of a prompt that differs from the previous request's: a "
                     "request's log-probs can differ from a fresh server's (docs/backends.md: conditions, bound)"),
    Provider("ollama", echo=False),             # logprobs since v0.12.11 (probed), echo never
    Provider("gemini_openai", ("generativelanguage.googleapis.com",), completions="none", echo=False, max_stop=5),
    Provider("maritaca", ("chat.maritaca.ai",), completions="none", echo=False),
    Provider("nim", ("integrate.api.nvidia.com",), echo=None),        # vLLM behind NVIDIA's API
    Provider("deepseek", ("api.deepseek.com",), completions="none", echo=False, max_stop=16,
             reasoning=(ReasoningRule(r"^deepseek-reasoner", token_param="max_tokens", temperature=True),)),
    Provider("compatible", echo=None, max_stop=4, batch=BatchLimits(50_000, 200 * 1024 ** 2),
             logprobs_fallback=(5,)),
)}
# Claude's Messages API and Message Batches; Gemini's generateContent and Batch Mode (backends.anthropic / google)
ANTHROPIC = Provider("anthropic", ("api.anthropic.com",), completions="none", completions_logprobs_max=None,
                     chat_logprobs_max=None, echo=False, batch=BatchLimits(100_000, 256 * 1024 ** 2))
# Claude models (regex on the model id) that reject a prefilled assistant turn (4.6 and later: "This model does
# not support assistant message prefill") and any temperature (Opus 4.7 and later: "`temperature` is deprecated")
ANTHROPIC_NO_PREFILL = r"^claude-(opus|sonnet|haiku)-(4-[6-9]|[5-9])"
ANTHROPIC_NO_TEMPERATURE = r"^claude-opus-(4-[7-9]|[5-9])"
GEMINI_URL = "https://generativelanguage.googleapis.com"  # the Gemini API (native and batch endpoints)
GEMINI = Provider("gemini", ("generativelanguage.googleapis.com",), completions="none", completions_logprobs_max=None,
                  chat_logprobs_max=20, echo=False, max_stop=5,
                  batch=BatchLimits(None, 20 * 1000 ** 2, custom_id=r"^.{1,}$"))


def public_url(url: str) -> str:
    """A base URL without credentials, query or fragment (safe for provenance, cache keys and notebooks)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path.rstrip('/')}"


def provider_for(name: str | None, base_urls: Sequence[str | None]) -> Provider:
    """The row named `name`, else the one whose host serves the first base URL, else `compatible`."""
    if name is not None:
        if name not in PROVIDERS:
            raise ValueError(f"openai backend: unknown provider {name!r}; known: {sorted(PROVIDERS)}")
        return PROVIDERS[name]
    url = base_urls[0] if base_urls else None
    host = (urlsplit(url).hostname or "") if url else "api.openai.com"   # the SDK's default base URL
    for p in PROVIDERS.values():
        if host in p.hosts:
            return p
    return PROVIDERS["compatible"]


@dataclass(frozen=True)
class Profile:
    """What the backend may send to one model of one provider."""

    provider: Provider
    model: str
    letters_endpoint: str | None     # completions | chat | None (this model exposes no log-probs)
    top_k: int                       # letters' top-k on that endpoint
    completions: bool                # /v1/completions serves this model (echo, completion-style generation)
    echo: bool | None                # prompt log-probs through echo (None: probed)
    rule: ReasoningRule | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def reasoning(self) -> bool:
        return self.rule is not None

    def with_top_k(self, k: int) -> Profile:
        return replace(self, top_k=k)

    def chat_only(self, chat_logprobs_max: int | None) -> Profile:
        """This profile for a model the server serves on chat completions only: letters from chat top_logprobs
        (capped at the provider's chat maximum), no /v1/completions (so no echo; generation through chat)."""
        k = min(self.top_k, chat_logprobs_max) if chat_logprobs_max is not None else self.top_k
        return replace(self, letters_endpoint="chat", top_k=k, completions=False, echo=False,
                       notes=self.notes + ("served on chat completions only (the server said so)",))


def _serves_completions(p: Provider, model: str) -> bool:
    return p.completions == "all" or (p.completions != "none" and re.search(p.completions, model) is not None)


def profile(p: Provider, model: str, top_logprobs: int = 20, reasoning: bool | None = None) -> Profile:
    """`p`'s limits for `model`: letters from completions top-k where /v1/completions serves the model (capped at
    its documented maximum), else from chat top_logprobs; a reasoning model's rule (`reasoning=True` forces the
    provider's generic one, False none)."""
    completions = _serves_completions(p, model)
    rule = next((r for r in p.reasoning if re.search(r.pattern, model)), None)
    if reasoning is True and rule is None:
        rule = ReasoningRule(".*")
    elif reasoning is False:
        rule = None
    endpoint: str | None
    endpoint, cap = ("completions", p.completions_logprobs_max) if completions else ("chat", p.chat_logprobs_max)
    notes = []
    if rule is not None and not rule.logprobs or cap is None:
        endpoint = None
        notes.append(f"{p.name} model {model!r} returns no log-probabilities")
    k = min(top_logprobs, cap) if cap is not None else top_logprobs
    if k < top_logprobs and endpoint is not None:
        notes.append(f"top-k capped at {k} ({p.name} {endpoint} maximum)")
    echo = (re.search(p.echo, model) is not None) if isinstance(p.echo, str) else p.echo
    return Profile(p, model, endpoint, k, completions, echo if completions else False, rule, tuple(notes))
