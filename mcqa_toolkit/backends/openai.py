"""OpenAIBackend: any OpenAI-compatible server (vLLM, llama.cpp / llama-cpp-python, Ollama, OpenAI, Maritaca,
NVIDIA NIM, DeepSeek, Gemini's OpenAI endpoint, OpenRouter) behind the Backend protocol, through the official SDK.

    load_backend({"backend": "openai", "model": "google/gemma-3-27b-it", "base_url": "http://gpu1:8000/v1",
                  "provider": "vllm", "api_key_env": "VLLM_API_KEY", "concurrency": 16})

What may be sent is the provider's row of backends.providers (`provider:`, else inferred from the base URL's
host, else `compatible`): letters from completions top-k where /v1/completions serves the model (OpenAI: only its
legacy models, logprobs <= 5), else from chat top_logprobs (<= 20); reasoning models' parameter rules. What the
server really supports is probed on first use with exactly the request shapes the run sends (a letters request
and an echo request, both cached), so a server that rejects or silently ignores `echo` (upstream llama.cpp
`llama-server`, Ollama) is refused for log-likelihood strategies instead of quietly scoring at chance.
The API key is read from the environment variable named by `api_key_env` when the client is built and is
never stored; credentials in a base URL are never written either (backends.secrets). Several `base_url`s are
used round-robin and share one server identity (`server_id`, part of every cache key: backends.cache).
"""
from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from mcqa_toolkit.backends.api import ApiBackend
from mcqa_toolkit.backends.base import Capabilities, Continuation, ContinuationLogprobs, Generation, LetterLogprobs
from mcqa_toolkit.backends.cache import RequestCache
from mcqa_toolkit.backends.http import RequestSender, RetryPolicy, TokenMeter, classify_status
from mcqa_toolkit.backends.openai_wire import (
    chat_letter_body,
    echo_body,
    generate_body,
    letter_body,
    parse_echo,
    parse_generation,
    parse_letters,
    reasoning_tokens,
    usage_tokens,
)
from mcqa_toolkit.backends.providers import profile, provider_for, public_url
from mcqa_toolkit.backends.secrets import with_credentials
from mcqa_toolkit.prompts.builder import move_trailing

PATHS = {"completions": "/completions", "chat": "/chat/completions"}
PROBE_TEXT = "A capital da França é Paris, e a capital da Itália é Roma."  # accented: checks the echo's offsets
# what a server says when /v1/completions is asked about a chat-only model (OpenAI: "This is a chat model and not
# supported in the v1/completions endpoint. Did you mean to use v1/chat/completions?"; gateways forward it)
CHAT_ONLY = re.compile(r"\bchat model\b|v1/chat/completions", re.IGNORECASE)
OPENAI_URL = "https://api.openai.com/v1"


def classify(e: BaseException) -> tuple[bool, float | datetime | None]:
    import openai

    return classify_status(e, (openai.APITimeoutError, openai.APIConnectionError), openai.APIStatusError)


class OpenAIBackend(ApiBackend):
    """An OpenAI-compatible server. `prefill=True` (vLLM: continue_final_message) lets chat prompts end with
    the template's assistant prefix and be scored; without it the prefix cannot be sent and chat prompts are
    generation-only. `price` = {"input": USD per 1M tokens, "output": ...} adds cost to usage. `reasoning`
    forces (True) or disables (False) the reasoning-model rules; `reasoning_budget` tokens are added to a
    reasoning model's output budget for its thinking."""

    kind = "openai"
    sdk = "openai"

    def __init__(self, model: str, base_url: str | Sequence[str] | None = None, api_key_env: str | None = None, *,
                 provider: str | None = None, server_id: str | None = None, name: str | None = None,
                 concurrency: int = 8, timeout: float = 300.0, retries: int = 10, backoff: float = 1.0,
                 top_logprobs: int = 20, prefill: bool = False, probe: bool = True, reasoning: bool | None = None,
                 reasoning_budget: int = 4096, cache: bool = True, cache_dir: str | None = None,
                 price: dict[str, float] | None = None, progress: bool = False, max_retry_seconds: float = 600.0,
                 **unknown: Any):
        if unknown:
            raise ValueError(f"openai backend: unknown option(s) {sorted(unknown)}")
        urls = [base_url] if isinstance(base_url, str) or base_url is None else list(base_url)
        if not urls:
            raise ValueError("openai backend: base_url is an empty list")
        if api_key_env is not None and not os.environ.get(api_key_env):
            raise ValueError(f"openai backend: environment variable {api_key_env} (api_key_env) is not set")
        self.model, self.name, self.base_urls, self.api_key_env = model, name or model, urls, api_key_env
        self.provider = provider_for(provider, urls)
        self.profile = profile(self.provider, model, top_logprobs, reasoning)
        self.top_logprobs, self.prefill, self.probe_server = top_logprobs, prefill, probe
        self.timeout, self.reasoning_budget = timeout, reasoning_budget
        self.server_id = server_id or ",".join(sorted({public_url(u or OPENAI_URL) for u in urls}))
        self.sender = RequestSender(self.kind, model, self._send, classify, cache=RequestCache(cache_dir, cache),
                                    concurrency=concurrency, policy=RetryPolicy(
                                        retries, backoff, timeout=timeout, max_retry_seconds=max_retry_seconds),
                                    progress=progress, server=self.server_id)
        self._clients: list[Any] = []
        self._next = itertools.count()
        self._caps: Capabilities | None = None
        self.probed: dict[str, str] = {}
        self.meter = TokenMeter(price)

    # ---- transport ---------------------------------------------------------------------------------------
    async def _send(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        import openai

        if not self._clients:  # built inside the sender's event loop; the key is read here and not kept
            key = os.environ.get(self.api_key_env) if self.api_key_env else None
            self._clients = [openai.AsyncOpenAI(base_url=with_credentials(u) if u else None, api_key=key or "EMPTY",
                                                max_retries=0, timeout=self.timeout) for u in self.base_urls]
        client = self._clients[next(self._next) % len(self._clients)]
        response = await client.post(PATHS[endpoint], cast_to=object, body=body)
        self.meter.add(*usage_tokens(response), reasoning=reasoning_tokens(response) or 0)
        return response

    def _call(self, requests: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any] | None]:
        return self.sender.send_all(requests)

    # ---- what the server can do --------------------------------------------------------------------------
    @property
    def capabilities(self) -> Capabilities:
        if self._caps is None:
            letters = self.profile.letters_endpoint is not None
            if self.probe_server:
                letters = letters and self._probe_letters()
            echo = self.profile.echo is not False     # after the letters probe: a chat-only model has no echo
            if self.probe_server:
                echo = echo and self._probe_echo()
            self._caps = Capabilities(next_token_logprobs=letters, continuation_logprobs=echo, generate=True,
                                      chat=True, chat_scoring=self.prefill and letters,
                                      batch=self.provider.batch is not None or self.provider.run_batch,
                                      top_logprobs=self.profile.top_k)
        return self._caps

    def _attempt(self, what: str, endpoint: str, body: dict[str, Any], check: Callable[[Any], Any]) -> bool:
        from mcqa_toolkit.backends.http import ApiError

        try:
            (response,) = self._call([(endpoint, body)])
            ok = response is None or bool(check(response))
            self.probed[what] = "ok" if ok else "the reply lacked what the run needs"
        except ApiError as e:
            if e.transient:  # unreachable or busy (a 429 storm, a server down): not a capability "no"
                raise
            ok, self.probed[what] = False, str(e)[:300]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            ok, self.probed[what] = False, str(e)[:300]
        return ok

    def _probe_letters(self) -> bool:
        """The run's letters request on the probe text, at the profile's top-k, then (compatible servers) at
        the provider's smaller fallbacks; the first accepted k is the run's. A `compatible` server whose
        /v1/completions answers that the model is a chat model (a gateway in front of a chat-only model) is asked
        again on chat top_logprobs, and the model is taken as chat-only from then on (no echo, chat generation)."""
        ok, chat_model = self._probe_letters_at()
        if not ok and chat_model and self.provider.name == "compatible":
            self.profile = self.profile.chat_only(self.provider.chat_logprobs_max)
            self.probed["letters endpoint"] = "chat (/v1/completions answered that this is a chat model)"
            ok, _ = self._probe_letters_at()
        return ok

    def _probe_letters_at(self) -> tuple[bool, bool]:
        """(accepted, refused on /v1/completions because the model is a chat model) at the profile's endpoint."""
        for k in (self.profile.top_k, *[k for k in self.provider.logprobs_fallback if k < self.profile.top_k]):
            endpoint, body = self._letter_request(PROBE_TEXT, None, k)
            what = f"letters {endpoint} top-{k}"
            if self._attempt(what, endpoint, body, lambda r: parse_letters(r, ["A"]).extra["top_k"] >= 2):
                self.profile = self.profile.with_top_k(k)
                return True, False
            if endpoint == "completions" and CHAT_ONLY.search(self.probed[what]):
                return False, True      # no smaller top-k helps a chat model
        return False, False

    def _probe_echo(self) -> bool:
        head, tail = PROBE_TEXT[:26], PROBE_TEXT[26:]
        return self._attempt("echo", "completions", echo_body(self.model, PROBE_TEXT),
                             lambda r: parse_echo(r, head, tail).n_tokens >= 3)

    def _route_provenance(self) -> dict[str, Any]:
        route = {"base_urls": [public_url(u) for u in self.base_urls if u], "provider": self.provider.name}
        if self.provider.history:  # the server's earlier requests can move this run's scores: say so
            route["server_history"] = self.provider.history
        return route

    def _own_provenance(self) -> dict[str, Any]:
        return {"prefill": self.prefill, "top_logprobs": self.capabilities.top_logprobs,
                "letters_endpoint": self.profile.letters_endpoint, "reasoning_model": self.profile.reasoning,
                "probe": dict(self.probed), "notes": list(self.profile.notes)}

    @property
    def batch_client(self) -> str:
        """The provider's Batch API; vLLM has none: `vllm run-batch` files (backends.batch)."""
        return "vllm_run_batch" if self.provider.run_batch else "openai"

    # ---- the protocol's three calls ----------------------------------------------------------------------
    def _chat_messages(self, prompt: Any) -> tuple[list[dict[str, str]], dict[str, Any]]:
        messages = [dict(m) for m in prompt.messages]
        if self.prefill and prompt.assistant_prefix:
            return messages + [{"role": "assistant", "content": prompt.assistant_prefix}], {
                "continue_final_message": True, "add_generation_prompt": False}
        return messages, {}

    def _letter_request(self, text: str, prompt: Any, k: int) -> tuple[str, dict[str, Any]]:
        if prompt is not None and getattr(prompt, "messages", None):
            messages, extra = self._chat_messages(prompt)
            return "chat", chat_letter_body(self.model, messages, k, extra)
        if self.profile.letters_endpoint == "chat":  # a chat model: the prompt is the user turn
            return "chat", chat_letter_body(self.model, [{"role": "user", "content": text}], k)
        return "completions", letter_body(self.model, text, k)

    def letter_logprobs(self, prompts: Sequence[Any]) -> list[LetterLogprobs]:
        k = self.capabilities.top_logprobs or self.profile.top_k
        requests = [self._letter_request(p.text, p, k) for p in prompts]
        out = []
        for (endpoint, body), p, r in zip(requests, prompts, self._call(requests), strict=True):
            exact = endpoint == "completions" or "continue_final_message" in body
            got = parse_letters(r, p.letter_continuations, exact=exact)
            out.append(LetterLogprobs(got.logprobs, got.n_prompt_tokens, {**got.extra, "endpoint": endpoint}))
        return out

    def loglikelihoods(self, requests: Sequence[Continuation]) -> list[ContinuationLogprobs]:
        pairs = []
        for r in requests:
            if not isinstance(r.context, str) and getattr(r.context, "messages", None):
                raise ValueError("the openai backend scores continuations of completion prompts only (chat=False)")
            text = r.context if isinstance(r.context, str) else r.context.text
            pairs.append(move_trailing(text, r.continuation))
        responses = self._call([("completions", echo_body(self.model, c + x)) for c, x in pairs])
        return [parse_echo(resp, c, x) for resp, (c, x) in zip(responses, pairs, strict=True)]

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = (), seeds: Sequence[int] | None = None) -> list[Generation]:
        requests = []
        common: dict[str, Any] = dict(max_tokens=max_new_tokens, temperature=temperature, stop=stop,
                                      profile=self.profile, reasoning_budget=self.reasoning_budget)
        for i, p in enumerate(prompts):
            seed = seeds[i] if seeds is not None else None
            if getattr(p, "messages", None):
                messages, extra = self._chat_messages(p)
                requests.append(("chat", generate_body(self.model, messages=messages, seed=seed, extra=extra,
                                                       **common)))
            elif not self.profile.completions:  # a chat-only model: the prompt is the user turn
                requests.append(("chat", generate_body(self.model, messages=[{"role": "user", "content": p.text}],
                                                       seed=seed, **common)))
            else:
                requests.append(("completions", generate_body(self.model, prompt=p.text, seed=seed, **common)))
        return [parse_generation(r, e == "chat") for r, (e, _) in zip(self._call(requests), requests, strict=True)]


def load(model: str, **options: Any) -> OpenAIBackend:
    return OpenAIBackend(model, **options)
