"""Sending API requests: N in flight on a private asyncio loop, retries with exponential backoff, the request
cache, and the counters that end up in provenance. Shared by the openai and anthropic backends.

The Backend protocol is synchronous (the runner calls it once per unit of work); `RequestSender.send_all`
runs the unit's requests concurrently on an event loop that lives in a daemon thread, which also works
inside Jupyter, where the notebook's own loop is already running. Cache hits never reach the network.
In collect mode (batch submission) misses are recorded instead of sent and come back as None.
"""
from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterator, Sequence

from tqdm.auto import tqdm

from mcqa_toolkit.backends.cache import RequestCache, request_key

__all__ = ["RetryPolicy", "RequestSender", "ApiError", "classify_status", "TokenMeter"]


class ApiError(RuntimeError):
    """A request that failed for good (not retryable, or out of retries): names the backend and the reason."""


@dataclass(frozen=True)
class RetryPolicy:
    """Retry 429 / 5xx / timeouts / connection errors `retries` times, waiting backoff x 2^attempt seconds
    (capped, with up to 10% jitter), or the server's Retry-After when it sends one."""

    retries: int = 6
    backoff: float = 1.0
    max_backoff: float = 60.0
    timeout: float = 300.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_backoff)
        base = min(self.backoff * 2 ** attempt, self.max_backoff)
        return base * (1 + 0.1 * rng.random())


class _LoopThread:
    """An event loop in a daemon thread; coroutines are submitted from the caller's thread and awaited there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcqa-api-loop", daemon=True)
        self.thread.start()

    def run(self, coro: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


def classify_status(e: BaseException, transient: tuple[type, ...], status_error: type) -> tuple[bool, float | None]:
    """(retryable, Retry-After seconds) for an SDK exception: the SDK's `transient` errors (timeouts,
    connection errors) and HTTP 408/409/429/5xx (incl. Anthropic's 529 "overloaded") are retried."""
    if isinstance(e, transient):
        return True, None
    if isinstance(e, status_error):
        response = getattr(e, "response", None)
        after = response.headers.get("retry-after") if response is not None else None
        try:
            seconds = float(after) if after is not None else None
        except ValueError:
            seconds = None
        return e.status_code in (408, 409, 429) or e.status_code >= 500, seconds
    return False, None


class TokenMeter:
    """Prompt and completion tokens the provider billed (requests actually sent), the reasoning tokens among the
    completion tokens where the provider reports them, and their cost when a `price` {"input": USD per 1M
    tokens, "output": ...} is given (reasoning tokens are billed as output)."""

    def __init__(self, price: dict[str, float] | None = None):
        self.price = price
        self.prompt_tokens = self.completion_tokens = self.reasoning_tokens = 0

    def add(self, prompt_tokens: int, completion_tokens: int, reasoning: int = 0) -> None:
        self.prompt_tokens += int(prompt_tokens)
        self.completion_tokens += int(completion_tokens)
        self.reasoning_tokens += int(reasoning)

    def usage(self, counters: dict[str, int]) -> dict[str, float]:
        out: dict[str, float] = {**counters, "prompt_tokens": self.prompt_tokens,
                                 "completion_tokens": self.completion_tokens,
                                 "reasoning_tokens": self.reasoning_tokens,
                                 "forwarded_tokens": self.prompt_tokens + self.completion_tokens}
        if self.price:
            out["cost_usd"] = (self.prompt_tokens * self.price.get("input", 0.0)
                               + self.completion_tokens * self.price.get("output", 0.0)) / 1e6
        return out


# send(endpoint, body) -> response dict; classify(exception) -> (retryable, retry_after seconds or None)
Send = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
Classify = Callable[[BaseException], tuple[bool, float | None]]


class RequestSender:
    """Cached, concurrent, retried requests of one backend (kind + model + server identity, see backends.cache)."""

    def __init__(self, kind: str, model: str, send: Send, classify: Classify, *, cache: RequestCache,
                 concurrency: int = 8, policy: RetryPolicy = RetryPolicy(), progress: bool = False,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, server: str = ""):
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.kind, self.model, self.send, self.classify, self.server = kind, model, send, classify, server
        self.cache, self.concurrency, self.policy, self.progress, self.sleep = cache, concurrency, policy, progress, sleep
        self.counters = {"requests": 0, "cache_hits": 0, "http_requests": 0, "retries": 0}
        self.collecting: dict[str, tuple[str, dict[str, Any]]] | None = None
        self._loop: _LoopThread | None = None
        self._rng = random.Random(0)

    def key(self, endpoint: str, body: dict[str, Any]) -> str:
        return request_key(self.kind, self.model, endpoint, body, self.server)

    @contextlib.contextmanager
    def collect(self) -> Iterator[dict[str, tuple[str, dict[str, Any]]]]:
        """Within the block, requests the cache lacks are recorded (and answered None), not sent."""
        self.collecting = {}
        try:
            yield self.collecting
        finally:
            self.collecting = None

    def send_all(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any] | None]:
        """Responses in request order (None for requests recorded in collect mode)."""
        keys = [self.key(e, b) for e, b in requests]
        out: list[dict[str, Any] | None] = [self.cache.get(k) for k in keys]
        self.counters["requests"] += len(keys)
        self.counters["cache_hits"] += sum(r is not None for r in out)
        todo: dict[str, tuple[str, dict[str, Any]]] = {}
        for k, req, got in zip(keys, requests, out):
            if got is None:
                todo.setdefault(k, req)  # identical requests in one call are sent once
        if todo and self.collecting is not None:
            self.collecting.update(todo)
            return out
        if todo:
            if self._loop is None:
                self._loop = _LoopThread()
            fetched = self._loop.run(self._gather(todo))
            out = [fetched.get(k, got) if got is None else got for k, got in zip(keys, out)]
        return out

    async def _gather(self, todo: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        gate = asyncio.Semaphore(self.concurrency)
        bar = tqdm(total=len(todo), desc=f"{self.kind}:{self.model}", unit="req", leave=False,
                   disable=not self.progress or len(todo) < 2)

        async def one(key: str, endpoint: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            async with gate:
                response = await self._with_retries(endpoint, body)
            self.cache.put(key, response)
            bar.update(1)
            return key, response

        try:
            return dict(await asyncio.gather(*(one(k, e, b) for k, (e, b) in todo.items())))
        finally:
            bar.close()

    async def _with_retries(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        for attempt in range(self.policy.retries + 1):
            self.counters["http_requests"] += 1
            try:
                return await asyncio.wait_for(self.send(endpoint, body), self.policy.timeout)
            except Exception as e:  # noqa: BLE001 - classified below; anything not retryable is re-raised
                retryable, retry_after = (True, None) if isinstance(e, asyncio.TimeoutError) else self.classify(e)
                if not retryable or attempt == self.policy.retries:
                    why = "gave up after {} retries".format(attempt) if retryable else "not retryable"
                    raise ApiError(f"{self.kind} backend, model {self.model!r}, {endpoint}: {type(e).__name__}: "
                                   f"{e} ({why})") from None
                self.counters["retries"] += 1
                await self.sleep(self.policy.delay(attempt, retry_after, self._rng))
        raise AssertionError("unreachable")


class SenderBacked:
    """`request_cache` and `collecting()` of the optional backends.base.BatchBackend protocol, for a backend whose
    requests all go through `self.sender` (a RequestSender)."""

    sender: RequestSender

    @property
    def request_cache(self) -> RequestCache:
        return self.sender.cache

    def collecting(self) -> contextlib.AbstractContextManager[dict[str, tuple[str, dict[str, Any]]]]:
        return self.sender.collect()

