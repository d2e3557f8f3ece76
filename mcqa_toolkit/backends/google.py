"""GoogleBackend: Gemini through the official `google-genai` SDK (generateContent, Batch Mode).

    load_backend({"backend": "google", "model": "gemini-2.0-flash", "api_key_env": "GEMINI_API_KEY"})

Generation: chat prompts' system messages become the `system_instruction`, their turns user/model contents, and
the template's answer cue ends the user turn (no prefill); completion-style prompts are one user turn;
temperature 0 unless the strategy samples (then with the record's seed); at most 5 stop sequences (the API's
limit). Thought parts (thinking models) are the generation's reasoning, never read for the answer, and
`thoughtsTokenCount` its token count. Letters (`first_token`) come from `response_logprobs` + `logprobs` (top
candidates, at most 20) of the first generated token, where the model offers them: on first use a letters
request is probed, and a model without log-probs ("Logprobs is not enabled for models/...") is refused for
letter strategies in one sentence, before any other request. No log-likelihoods of given text (no echo).
Requests are cached by (model, server identity, body) like every API backend; the key is read from
`api_key_env` when the client is built and never stored. `base_url` points the SDK elsewhere (a proxy, or the
stand-in of the tests).
"""
from __future__ import annotations

import importlib
import math
import os
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

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
from mcqa_toolkit.backends.http import ApiError, RequestSender, RetryPolicy, TokenMeter
from mcqa_toolkit.backends.providers import GEMINI, GEMINI_URL, public_url
from mcqa_toolkit.backends.secrets import with_credentials

if TYPE_CHECKING:
    from google.genai.types import HttpOptionsDict

PROBE_TEXT = "A capital da França é Paris, e a capital da Itália é"
_VOLATILE = ("sdk_http_response", "automatic_function_calling_history")  # headers (dates): not part of an answer


def classify(e: BaseException) -> tuple[bool, float | None]:
    """(retryable, None): connection errors and timeouts, HTTP 408/429/5xx (Gemini sends no Retry-After)."""
    from google.genai import errors

    if isinstance(e, errors.APIError):
        return e.code in (408, 429) or e.code >= 500, None
    transient = []
    for module, name in (("httpx", "TransportError"), ("httpx2", "TransportError"),
                         ("aiohttp", "ClientConnectionError")):
        try:  # the SDK uses whichever is installed
            transient.append(getattr(importlib.import_module(module), name))
        except ImportError:
            pass
    return isinstance(e, tuple(transient)), None


def contents_of(prompt: Any) -> tuple[list[dict[str, Any]], str]:
    """(contents, system instruction) of a rendered prompt; the answer cue ends the last user turn."""
    if not getattr(prompt, "messages", None):
        return [{"role": "user", "parts": [{"text": prompt.text}]}], ""
    system = "\n\n".join(m["content"] for m in prompt.messages if m["role"] == "system")
    turns: list[dict[str, Any]] = [
        {"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
        for m in prompt.messages if m["role"] != "system"]
    cue = (prompt.assistant_prefix or "").rstrip()
    if cue:
        last = turns[-1]["parts"][0]["text"].rstrip()
        turns[-1] = {"role": turns[-1]["role"], "parts": [{"text": f"{last}\n\n{cue}"}]}
    return turns, system


def request_body(contents: list[dict[str, Any]], system: str, **config: Any) -> dict[str, Any]:
    """The cached request: contents + GenerateContentConfig fields (also a Batch Mode inline request)."""
    cfg = {k: v for k, v in config.items() if v is not None}
    if system:
        cfg["system_instruction"] = system
    return {"contents": contents, "config": cfg}


def parse_letters(response: dict[str, Any] | None, continuations: Sequence[str]) -> LetterLogprobs:
    """Each letter's log-prob among the first token's top candidates (" A", "A", "(A" read as "A"; their
    probabilities summed); NaN when outside them."""
    if response is None:
        return LetterLogprobs(np.full(len(continuations), np.nan), 0, {"letters_seen": 0})
    cand = (response.get("candidates") or [{}])[0]
    tops = ((cand.get("logprobs_result") or {}).get("top_candidates") or [{}])[0].get("candidates") or []
    if not tops:
        raise ValueError("Gemini returned no top candidates for the answer slot")
    letter = {c: c.strip() for c in continuations}
    values = []
    for c in continuations:
        hits = [t["log_probability"] for t in tops if t.get("token", "").strip().lstrip("(*[").strip() == letter[c]]
        values.append(float(np.logaddexp.reduce(hits)) if hits else math.nan)
    usage = response.get("usage_metadata") or {}
    best = max(tops, key=lambda t: t["log_probability"])["token"]
    values_arr = np.array(values)
    return LetterLogprobs(values_arr, int(usage.get("prompt_token_count") or 0),
                          {"letters_seen": int(np.isfinite(values_arr).sum()), "top_k": len(tops), "top_token": best,
                           "letter_match": "stripped", "endpoint": "generateContent"})


def parse_generation(response: dict[str, Any] | None) -> Generation:
    """Answer text (thought parts apart), tokens (thoughts included in the generated count), finish reason."""
    if response is None:
        return Generation("", 0, 0, "pending")
    cand = (response.get("candidates") or [{}])[0]
    parts = (cand.get("content") or {}).get("parts") or []
    text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    thinking = "".join(p.get("text", "") for p in parts if p.get("thought"))
    usage = response.get("usage_metadata") or {}
    thoughts = usage.get("thoughts_token_count")
    generated = int(usage.get("candidates_token_count") or 0) + int(thoughts or 0)
    return Generation(text, int(usage.get("prompt_token_count") or 0), generated, cand.get("finish_reason") or "",
                      reasoning=thinking, n_reasoning_tokens=None if thoughts is None else int(thoughts))


class GoogleBackend(ApiBackend):
    """Gemini through google-genai. `thinking_budget` (tokens; 0 turns thinking off where the model allows it)
    is sent as the thinking config and added to the output budget."""

    kind = "google"
    sdk = "google-genai"
    batch_client = "gemini"
    api_key_env: str

    def __init__(self, model: str, api_key_env: str = "GEMINI_API_KEY", *, base_url: str | None = None,
                 api_version: str = "v1beta", name: str | None = None, concurrency: int = 4, timeout: float = 300.0,
                 retries: int = 10, backoff: float = 1.0, top_logprobs: int = 20, thinking_budget: int | None = None,
                 probe: bool = True, cache: bool = True, cache_dir: str | None = None,
                 price: dict[str, float] | None = None, progress: bool = False, max_retry_seconds: float = 600.0,
                 **unknown: Any):
        if unknown:
            raise ValueError(f"google backend: unknown option(s) {sorted(unknown)}")
        if not os.environ.get(api_key_env):
            raise ValueError(f"google backend: environment variable {api_key_env} (api_key_env) is not set")
        self.model, self.name, self.api_key_env, self.base_url = model, name or model, api_key_env, base_url
        self.api_version, self.timeout, self.probe_server = api_version, timeout, probe
        self.top_k = min(top_logprobs, GEMINI.chat_logprobs_max or top_logprobs)
        self.thinking_budget, self.meter = thinking_budget, TokenMeter(price)
        self.server_id = public_url(base_url or GEMINI_URL) + f"/{api_version}"
        self.sender = RequestSender(self.kind, model, self._send, classify, cache=RequestCache(cache_dir, cache),
                                    concurrency=concurrency, policy=RetryPolicy(
                                        retries, backoff, timeout=timeout, max_retry_seconds=max_retry_seconds),
                                    progress=progress, server=self.server_id)
        self._client: Any = None
        self._caps: Capabilities | None = None
        self.probed: dict[str, str] = {}

    def client(self) -> Any:
        """A google-genai Client (the key read now, not kept by this object)."""
        from google import genai

        options: HttpOptionsDict = {"api_version": self.api_version, "timeout": int(self.timeout * 1000)}
        if self.base_url:
            options["base_url"] = with_credentials(self.base_url)
        return genai.Client(api_key=os.environ.get(self.api_key_env), http_options=options)

    async def _send(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            self._client = self.client()
        from google.genai import types

        config = types.GenerateContentConfig.model_validate(body["config"])
        got = await self._client.aio.models.generate_content(model=self.model, contents=body["contents"], config=config)
        response = got.model_dump(mode="json", exclude_none=True)
        for key in _VOLATILE:
            response.pop(key, None)
        usage = response.get("usage_metadata") or {}
        thoughts = int(usage.get("thoughts_token_count") or 0)
        self.meter.add(usage.get("prompt_token_count") or 0, int(usage.get("candidates_token_count") or 0) + thoughts,
                       reasoning=thoughts)
        return response

    def _thinking(self) -> dict[str, Any] | None:
        return None if self.thinking_budget is None else {"thinking_budget": int(self.thinking_budget)}

    def _letter_body(self, prompt: Any) -> dict[str, Any]:
        contents, system = contents_of(prompt)
        return request_body(contents, system, temperature=0.0, max_output_tokens=1 + (self.thinking_budget or 0),
                            response_logprobs=True, logprobs=self.top_k, thinking_config=self._thinking())

    @property
    def capabilities(self) -> Capabilities:
        if self._caps is None:
            letters = True
            if self.probe_server:
                probe = SimpleNamespace(text=PROBE_TEXT, messages=None)
                try:
                    (response,) = self.sender.send_all([("generate", self._letter_body(probe))])
                    letters = response is None or parse_letters(response, [" A"]).extra["top_k"] >= 1
                    self.probed["letters"] = "ok" if letters else "no top candidates"
                except ApiError as e:
                    if e.transient:  # unreachable or busy: not a capability "no"
                        raise
                    letters, self.probed["letters"] = False, str(e)[:300]
                except (ValueError, KeyError, IndexError) as e:
                    letters, self.probed["letters"] = False, str(e)[:300]
            self._caps = Capabilities(next_token_logprobs=letters, generate=True, chat=True, batch=True,
                                      top_logprobs=self.top_k)
        return self._caps

    def _own_provenance(self) -> dict[str, Any]:
        return {"thinking_budget": self.thinking_budget, "probe": dict(self.probed)}

    def letter_logprobs(self, prompts: Sequence[Any]) -> list[LetterLogprobs]:
        responses = self.sender.send_all([("generate", self._letter_body(p)) for p in prompts])
        return [parse_letters(r, p.letter_continuations) for r, p in zip(responses, prompts, strict=True)]

    def loglikelihoods(self, requests: Sequence[Continuation]) -> list[ContinuationLogprobs]:
        raise CapabilityError(f"backend {self.name!r} cannot score loglik: Gemini cannot return log-probabilities "
                              "of given text; use method='first_token' or method='generate'")

    def generate(self, prompts: Sequence[Any], *, max_new_tokens: int, temperature: float = 0.0,
                 stop: Sequence[str] = (), seeds: Sequence[int] | None = None) -> list[Generation]:
        if GEMINI.max_stop is not None and len(stop) > GEMINI.max_stop:
            raise ValueError(f"Gemini accepts at most {GEMINI.max_stop} stop sequences; the strategy has {len(stop)}")
        bodies = []
        for i, p in enumerate(prompts):
            contents, system = contents_of(p)
            seed = seeds[i] % (2 ** 31) if seeds is not None and temperature > 0 else None
            bodies.append(("generate", request_body(
                contents, system, temperature=float(temperature), seed=seed, stop_sequences=list(stop) or None,
                max_output_tokens=int(max_new_tokens) + (self.thinking_budget or 0), thinking_config=self._thinking())))
        return [parse_generation(r) for r in self.sender.send_all(bodies)]


def load(model: str, **options: Any) -> GoogleBackend:
    return GoogleBackend(model, **options)
