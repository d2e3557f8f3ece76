"""OpenAIBackend: any OpenAI-compatible server (vLLM, llama.cpp / llama-cpp-python, Ollama, OpenAI, Maritaca,
NVIDIA NIM, Gemini's OpenAI endpoint, OpenRouter) behind the Backend protocol, through the official SDK.

    load_backend({"backend": "openai", "model": "google/gemma-3-27b-it", "base_url": "http://gpu1:8000/v1",
                  "api_key_env": "VLLM_API_KEY", "concurrency": 16})

Letters and continuations use `/v1/completions` (see openai_wire); generation uses chat completions for chat
prompts and completions otherwise. What the server really supports is probed on first use (a top-k request
and an echo request, both cached), so a server that rejects or silently ignores `echo` (upstream llama.cpp
`llama-server`, Ollama) is refused for log-likelihood strategies instead of quietly scoring at chance.
The API key is read from the environment variable named by `api_key_env` when the client is built and is
never stored: not in records, provenance, the cache or logs. Several `base_url`s are used round-robin.
"""
from __future__ import annotations

import importlib.metadata as md
import itertools
import os
from typing import Any, Sequence
from urllib.parse import urlsplit

from mcqa_toolkit.backends.base import Capabilities, Continuation, ContinuationLogprobs, Generation, LetterLogprobs
from mcqa_toolkit.backends.cache import RequestCache
from mcqa_toolkit.backends.http import RequestSender, RetryPolicy, SenderBacked, TokenMeter, classify_status
from mcqa_toolkit.backends.openai_wire import (echo_body, generate_body, letter_body, parse_echo,
                                               parse_generation, parse_letters, usage_tokens)
from mcqa_toolkit.prompts.builder import move_trailing

PATHS = {"completions": "/completions", "chat": "/chat/completions"}
_PROBE_TEXT = "The capital of France is Paris, and the capital of Italy is Rome."


def _public_url(url: str) -> str:
    """A base URL without credentials or query string (safe for provenance)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}"


def classify(e: BaseException) -> tuple[bool, float | None]:
    import openai

    return classify_status(e, (openai.APITimeoutError, openai.APIConnectionError), openai.APIStatusError)


class OpenAIBackend(SenderBacked):
    """An OpenAI-compatible server. `prefill=True` (vLLM: continue_final_message) lets chat prompts end with
    the template's assistant prefix and be scored; without it the prefix cannot be sent and chat prompts are
    generation-only. `price` = {"input": USD per 1M tokens, "output": ...} adds cost to usage."""

    kind = "openai"

    def __init__(self, model: str, base_url: str | Sequence[str] | None = None, api_key_env: str | None = None, *,
                 name: str | None = None, concurrency: int = 8, timeout: float = 300.0, retries: int = 10,
                 backoff: float = 1.0, top_logprobs: int = 20, prefill: bool = False, probe: bool = True,
                 cache: bool = True, cache_dir: str | None = None, price: dict[str, float] | None = None,
                 progress: bool = False, max_retry_seconds: float = 600.0, **unknown: Any):
        if unknown:
            raise ValueError(f"openai backend: unknown option(s) {sorted(unknown)}")
        urls = [base_url] if isinstance(base_url, str) or base_url is None else list(base_url)
        if not urls:
            raise ValueError("openai backend: base_url is an empty list")
        if api_key_env is not None and not os.environ.get(api_key_env):
            raise ValueError(f"openai backend: environment variable {api_key_env} (api_key_env) is not set")
        self.model, self.name, self.base_urls, self.api_key_env = model, name or model, urls, api_key_env
        self.top_logprobs, self.prefill, self.probe_server = top_logprobs, prefill, probe
        self.timeout = timeout
        self.sender = RequestSender(self.kind, model, self._send, classify, cache=RequestCache(cache_dir, cache),
                                    concurrency=concurrency, policy=RetryPolicy(
                                        retries, backoff, timeout=timeout, max_retry_seconds=max_retry_seconds),
                                    progress=progress)
        self._clients: list[Any] = []
        self._next = itertools.count()
        self._caps: Capabilities | None = None
        self.meter = TokenMeter(price)

    # ---- transport ---------------------------------------------------------------------------------------
    async def _send(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        import openai

        if not self._clients:  # built inside the sender's event loop; the key is read here and not kept
            key = os.environ.get(self.api_key_env) if self.api_key_env else None
            self._clients = [openai.AsyncOpenAI(base_url=u, api_key=key or "EMPTY", max_retries=0,
                                                timeout=self.timeout) for u in self.base_urls]
        client = self._clients[next(self._next) % len(self._clients)]
        response = await client.post(PATHS[endpoint], cast_to=object, body=body)
        self.meter.add(*usage_tokens(response))
        return response

    def _call(self, requests: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any] | None]:
        return self.sender.send_all(requests)

    # ---- what the server can do --------------------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        if self._caps is None:
            letters = echo = True
            if self.probe_server:
                letters, echo = self._probe()
            self._caps = Capabilities(next_token_logprobs=letters, continuation_logprobs=echo, generate=True,
                                      chat=True, chat_scoring=self.prefill and letters, batch=True,
                                      top_logprobs=self.top_logprobs)
        return self._caps

    def _probe(self) -> tuple[bool, bool]:
        """(top-k log-probs work, echo works): an echo must return a log-prob for every prompt token after the
        first, with offsets inside the prompt; a server that ignores echo returns only the generated token."""
        from mcqa_toolkit.backends.http import ApiError

        def attempt(body: dict[str, Any], check) -> bool:
            try:
                (response,) = self._call([("completions", body)])
                return response is None or bool(check(response))
            except ApiError as e:
                if e.transient:  # unreachable or busy (429 storm, server down): not a capability "no"
                    raise
                return False
            except (ValueError, KeyError, IndexError, TypeError):
                return False

        head, tail = _PROBE_TEXT[:24], _PROBE_TEXT[24:]
        letters = attempt(letter_body(self.model, _PROBE_TEXT, min(self.top_logprobs, 5)),
                          lambda r: len(r["choices"][0]["logprobs"]["top_logprobs"][0]) >= 2)
        echo = attempt(echo_body(self.model, _PROBE_TEXT), lambda r: parse_echo(r, head, tail).n_tokens >= 3)
        return letters, echo

    def provenance(self) -> dict[str, Any]:
        try:
            sdk = md.version("openai")
        except md.PackageNotFoundError:
            sdk = None
        return {"backend": self.kind, "model": self.name, "source": f"{self.kind}:{self.model}",
                "served_model": self.model, "base_urls": [_public_url(u) for u in self.base_urls if u],
                "api_key_env": self.api_key_env, "prefill": self.prefill, "top_logprobs": self.top_logprobs,
                "capabilities": self.capabilities.as_dict(), "packages": {"openai": sdk}}

    def usage(self) -> dict[str, float]:
        return self.meter.usage(self.sender.counters)

    def batch_api(self) -> Any:
        """The provider's batch API for this backend (backends.base.BatchBackend)."""
        from mcqa_toolkit.backends.batch import OpenAIBatches

        return OpenAIBatches(self)

    # ---- the protocol's three calls ----------------------------------------------------------------------
    def _chat_messages(self, prompt: Any) -> tuple[list[dict[str, str]], dict[str, Any]]:
        messages = [dict(m) for m in prompt.messages]
        if self.prefill and prompt.assistant_prefix:
            return messages + [{"role": "assistant", "content": prompt.assistant_prefix}], {
                "continue_final_message": True, "add_generation_prompt": False}
        return messages, {}

    def letter_logprobs(self, prompts: Sequence[Any]) -> list[LetterLogprobs]:
        requests = []
        for p in prompts:
            if getattr(p, "messages", None):
                messages, extra = self._chat_messages(p)
                requests.append(("chat", {"model": self.model, "messages": messages, "max_tokens": 1,
                                          "temperature": 0.0, "logprobs": True, "top_logprobs": self.top_logprobs,
                                          **extra}))
            else:
                requests.append(("completions", letter_body(self.model, p.text, self.top_logprobs)))
        return [parse_letters(r, p.letter_continuations) for r, p in zip(self._call(requests), prompts)]

    def loglikelihoods(self, requests: Sequence[Continuation]) -> list[ContinuationLogprobs]:
        pairs = []
        for r in requests:
            if not isinstance(r.context, str) and getattr(r.context, "messages", None):
                raise ValueError("the openai backend scores continuations of completion prompts only (chat=False)")
            text = r.context if isinstance(r.context, str) else r.context.text
            pairs.append(move_trailing(text, r.continuation))
        responses = self._call([("completions", echo_body(self.model, c + x)) for c, x in pairs])
        return [parse_echo(resp, c, x) for resp, (c, x) in zip(responses, pairs)]

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = (), seeds: Sequence[int] | None = None) -> list[Generation]:
        requests = []
        for i, p in enumerate(prompts):
            seed = seeds[i] if seeds is not None else None
            if getattr(p, "messages", None):
                messages, extra = self._chat_messages(p)
                requests.append(("chat", generate_body(self.model, messages=messages, max_tokens=max_new_tokens,
                                                       temperature=temperature, stop=stop, seed=seed, extra=extra)))
            else:
                requests.append(("completions", generate_body(self.model, prompt=p.text, max_tokens=max_new_tokens,
                                                              temperature=temperature, stop=stop, seed=seed)))
        return [parse_generation(r, e == "chat") for r, (e, _) in zip(self._call(requests), requests)]


def load(model: str, **options: Any) -> OpenAIBackend:
    return OpenAIBackend(model, **options)
