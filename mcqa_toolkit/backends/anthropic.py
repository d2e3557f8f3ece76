"""AnthropicBackend: Claude models through the official SDK's Messages API, generation only.

    load_backend({"backend": "anthropic", "model": "claude-sonnet-4-5", "api_key_env": "ANTHROPIC_API_KEY"})

Chat prompts become `system` + user turns, and the template's assistant prefix (e.g. "Resposta:") is sent as a
prefilled assistant turn, so the answer continues it as with a local model; models that reject prefill (Claude
4.6 and later, backends.providers) get the cue at the end of the user turn instead. Completion-style prompts are
sent as one user turn. Temperature 0 unless the strategy samples (the API has no seed: sampled runs are not
reproducible, which provenance says); never sent to the models that reject it (Opus 4.7 and later). Thinking
blocks are kept as the generation's reasoning, never read for the answer. The Messages API exposes no
log-probabilities, so first_token,
loglik and cloze are refused before any request. Retries, concurrency and the request cache are the shared
ones (backends.http); the API key is read from `api_key_env` when the client is built and never stored.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mcqa_toolkit.backends.api import ApiBackend
from mcqa_toolkit.backends.base import (
    Capabilities,
    CapabilityError,
    Continuation,
    ContinuationLogprobs,
    Generation,
    LetterLogprobs,
)
from mcqa_toolkit.backends.cache import RequestCache
from mcqa_toolkit.backends.http import RequestSender, RetryPolicy, TokenMeter, classify_status
from mcqa_toolkit.backends.providers import ANTHROPIC_NO_PREFILL, ANTHROPIC_NO_TEMPERATURE, public_url
from mcqa_toolkit.backends.secrets import with_credentials

MESSAGES_PATH = "/v1/messages"


def classify(e: BaseException) -> tuple[bool, float | datetime | None]:
    import anthropic

    return classify_status(e, (anthropic.APITimeoutError, anthropic.APIConnectionError), anthropic.APIStatusError)


def message_body(model: str, prompt: Any, *, max_tokens: int, temperature: float,
                 stop: Sequence[str]) -> dict[str, Any]:
    """The Messages API body for one rendered prompt (chat or completion-style), within the model's rules."""
    body: dict[str, Any] = {"model": model, "max_tokens": int(max_tokens)}
    if not re.search(ANTHROPIC_NO_TEMPERATURE, model):
        body["temperature"] = float(temperature)
    if getattr(prompt, "messages", None):
        system = "\n\n".join(m["content"] for m in prompt.messages if m["role"] == "system")
        turns = [{"role": m["role"], "content": m["content"]} for m in prompt.messages if m["role"] != "system"]
        cue = (prompt.assistant_prefix or "").rstrip()  # the API rejects trailing whitespace in a prefill
        if cue and re.search(ANTHROPIC_NO_PREFILL, model):  # no prefill: the cue ends the user turn
            turns[-1] = {**turns[-1], "content": f"{turns[-1]['content'].rstrip()}\n\n{cue}"}
        elif cue:  # prefill: the reply continues the cue
            turns.append({"role": "assistant", "content": cue})
        if system:
            body["system"] = system
    else:
        turns = [{"role": "user", "content": prompt.text}]
    body["messages"] = turns
    stops = [s for s in stop if s.strip()]  # the API rejects whitespace-only stop sequences
    if stops:
        body["stop_sequences"] = stops
    return body


def parse_message(response: dict[str, Any] | None) -> Generation:
    if response is None:
        return Generation("", 0, 0, "pending")
    if response.get("type") != "message":
        raise ValueError(f"not a Messages API message: {str(response)[:200]}")
    blocks = response.get("content", [])
    text = "".join(block.get("text", "") for block in blocks if block.get("type") == "text")
    thinking = "\n\n".join(block.get("thinking", "") for block in blocks if block.get("type") == "thinking")
    usage = response.get("usage") or {}
    return Generation(text, int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0),
                      response.get("stop_reason") or "", reasoning=thinking)


class AnthropicBackend(ApiBackend):
    """Claude through the Messages API (generation only)."""

    kind = "anthropic"
    sdk = "anthropic"
    batch_client = "anthropic"
    api_key_env: str

    def __init__(self, model: str, api_key_env: str = "ANTHROPIC_API_KEY", *, base_url: str | None = None,
                 name: str | None = None, concurrency: int = 4, timeout: float = 300.0, retries: int = 10,
                 backoff: float = 1.0, cache: bool = True, cache_dir: str | None = None,
                 price: dict[str, float] | None = None, progress: bool = False, max_retry_seconds: float = 600.0,
                 **unknown: Any):
        if unknown:
            raise ValueError(f"anthropic backend: unknown option(s) {sorted(unknown)}")
        if not os.environ.get(api_key_env):
            raise ValueError(f"anthropic backend: environment variable {api_key_env} (api_key_env) is not set")
        self.model, self.name, self.api_key_env, self.base_url = model, name or model, api_key_env, base_url
        self.timeout, self.meter = timeout, TokenMeter(price)
        self.server_id = public_url(base_url or "https://api.anthropic.com")  # part of every cache key
        self.sender = RequestSender(self.kind, model, self._send, classify, cache=RequestCache(cache_dir, cache),
                                    concurrency=concurrency, policy=RetryPolicy(
                                        retries, backoff, timeout=timeout, max_retry_seconds=max_retry_seconds),
                                    progress=progress, server=self.server_id)
        self._client: Any = None

    async def _send(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        import anthropic

        if self._client is None:  # built inside the sender's event loop; the key is read here and not kept
            self._client = anthropic.AsyncAnthropic(api_key=os.environ.get(self.api_key_env),
                                                    base_url=with_credentials(self.base_url) if self.base_url else None,
                                                    max_retries=0, timeout=self.timeout)
        response = await self._client.post(MESSAGES_PATH, cast_to=object, body=body)
        usage = response.get("usage") or {}
        self.meter.add(usage.get("input_tokens") or 0, usage.get("output_tokens") or 0)
        return response

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(generate=True, chat=True, batch=True)

    def _own_provenance(self) -> dict[str, Any]:
        return {"seeded_sampling": False, "prefill": not re.search(ANTHROPIC_NO_PREFILL, self.model),
                "temperature_sent": not re.search(ANTHROPIC_NO_TEMPERATURE, self.model)}

    def letter_logprobs(self, prompts: Sequence[Any]) -> list[LetterLogprobs]:
        raise CapabilityError(f"backend {self.name!r} cannot score first_token: the Messages API exposes no "
                              "log-probabilities; use method='generate'")

    def loglikelihoods(self, requests: Sequence[Continuation]) -> list[ContinuationLogprobs]:
        raise CapabilityError(f"backend {self.name!r} cannot score loglik: the Messages API cannot return "
                              "log-probabilities of given text; use method='generate'")

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = (), seeds: Sequence[int] | None = None) -> list[Generation]:
        bodies = [("messages", message_body(self.model, p, max_tokens=max_new_tokens, temperature=temperature,
                                            stop=stop)) for p in prompts]
        return [parse_message(r) for r in self.sender.send_all(bodies)]


def load(model: str, **options: Any) -> AnthropicBackend:
    return AnthropicBackend(model, **options)
