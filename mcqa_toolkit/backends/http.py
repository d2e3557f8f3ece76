"""Sending API requests: N in flight on a private asyncio loop, retries (Retry-After or exponential backoff,
within a time budget: RetryPolicy), the request cache, and the counters that end up in provenance. Shared by
the API backends (openai, anthropic, google; their shared part is backends.api.ApiBackend).

The Backend protocol is synchronous (the runner calls it once per unit of work); `RequestSender.send_all`
runs the unit's requests concurrently on an event loop that lives in a daemon thread, which also works
inside Jupyter, where the notebook's own loop is already running. Cache hits never reach the network.
In collect mode (batch submission) misses are recorded instead of sent and come back as None.

Why not the SDKs' own retries (their clients are made with max_retries=0): their rules differ (openai 3.57 obeys
Retry-After up to 120 s, anthropic 2.16 any wait, google-genai its HttpRetryOptions), they sleep on the real clock
(the 429-storm tests drive an injected one), keep no time budget per unit of work and count no retries for
provenance; one policy here serves all three.
"""
from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import random
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from tqdm.auto import tqdm

from mcqa_toolkit.backends.cache import RequestCache, request_key

__all__ = ["RetryPolicy", "RequestSender", "ApiError", "classify_status", "retry_after", "TokenMeter"]


class ApiError(RuntimeError):
    """A request that failed for good (not retryable, or out of retries): names the backend and the reason.
    `transient`: the server was unreachable or busy (retries or their budget ran out), as opposed to refusing
    the request itself (a 4xx other than 408/409/429): what a capability probe must not read as a "no"."""

    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long a failed request is retried (408 / 409 / 429 / 5xx, timeouts, connection errors).

    The wait before retry n (n = 0, 1, ...) is what the server asked for when it says so (`retry-after-ms`, or
    `retry-after` as seconds or as an HTTP date, read like the OpenAI and Anthropic SDKs read them), clamped to
    [0, max_backoff]; otherwise backoff x 2^n, capped at max_backoff, times a jitter factor in [1, 1.1).
    A request stops being retried after `retries` retries, or when the next wait would take its total wait
    past `max_retry_seconds` (the budget): the ApiError then says so, the records written so far are kept, and
    running again resumes. With the defaults a provider may refuse for about 5 minutes without Retry-After
    (1 + 2 + 4 + ... + 60 s) and up to 10 minutes when it asks for waits."""

    retries: int = 10
    backoff: float = 1.0
    max_backoff: float = 60.0
    timeout: float = 300.0
    max_retry_seconds: float = 600.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry `attempt` (0-based), given the server's Retry-After in seconds."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_backoff)
        base = min(self.backoff * 2 ** attempt, self.max_backoff)
        return base * (1 + 0.1 * rng.random())


def retry_after(headers: Mapping[str, str] | None) -> float | datetime | None:
    """What a response asks to wait: `retry-after-ms` (milliseconds), else `retry-after` as delay-seconds or as
    an HTTP date (RFC 9110 section 10.2.3). Seconds as a float, a date as an aware datetime (the sender
    subtracts its clock's now); None when absent or unreadable."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
            if math.isfinite(value):
                return value
        except ValueError:
            pass
    after = headers.get("retry-after")
    if after is None:
        return None
    try:
        value = float(after)
        return value if math.isfinite(value) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(after.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


class _LoopThread:
    """An event loop in a daemon thread; coroutines are submitted from the caller's thread and awaited there."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcqa-api-loop", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


def classify_status(e: BaseException, transient: tuple[type, ...], status_error: type[Any]
                    ) -> tuple[bool, float | datetime | None]:
    """(retryable, Retry-After: seconds, an HTTP date, or None) for an SDK exception: the SDK's `transient`
    errors (timeouts, connection errors) and HTTP 408/409/429/5xx (incl. Anthropic's 529 "overloaded") are
    retried, except 501 Not Implemented and 505 (the server will never do it: llama.cpp answers 501 for a
    feature it lacks) and OpenAI's 429 "insufficient_quota" (the account's quota is spent)."""
    if isinstance(e, transient):
        return True, None
    if isinstance(e, status_error):
        response = getattr(e, "response", None)
        code = e.status_code
        if code == 429 and _quota_spent(getattr(e, "body", None)):  # OpenAI: retrying never helps
            return False, None
        return code in (408, 409, 429) or code >= 500 and code not in (501, 505), retry_after(
            response.headers if response is not None else None)
    return False, None


def _quota_spent(body: Any) -> bool:
    """A 429 that means the account's quota is spent (OpenAI: error code or type "insufficient_quota")."""
    error = body.get("error", body) if isinstance(body, dict) else None
    return isinstance(error, dict) and "insufficient_quota" in (error.get("code"), error.get("type"))


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

    def usage(self, counters: Mapping[str, float]) -> dict[str, float]:
        out: dict[str, float] = {**counters, "prompt_tokens": self.prompt_tokens,
                                 "completion_tokens": self.completion_tokens,
                                 "reasoning_tokens": self.reasoning_tokens,
                                 "forwarded_tokens": self.prompt_tokens + self.completion_tokens}
        if self.price:
            out["cost_usd"] = (self.prompt_tokens * self.price.get("input", 0.0)
                               + self.completion_tokens * self.price.get("output", 0.0)) / 1e6
        return out


# send(endpoint, body) -> response dict; classify(exception) -> (retryable, Retry-After: seconds, a date or None)
Send = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
Classify = Callable[[BaseException], tuple[bool, float | datetime | None]]


class RequestSender:
    """Cached, concurrent, retried requests of one backend (kind + model + server identity, see backends.cache)."""

    def __init__(self, kind: str, model: str, send: Send, classify: Classify, *, cache: RequestCache,
                 concurrency: int = 8, policy: RetryPolicy = RetryPolicy(), progress: bool = False,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep, clock: Callable[[], float] = time.time,
                 server: str = ""):
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.kind, self.model, self.send, self.classify, self.server = kind, model, send, classify, server
        self.cache, self.concurrency, self.policy, self.progress = cache, concurrency, policy, progress
        self.sleep = sleep  # awaited between retries (tests inject one that advances a fake clock)
        self.clock = clock  # wall-clock seconds, to turn a Retry-After date into a wait (tests inject a fake one)
        self.counters = {"requests": 0, "cache_hits": 0, "http_requests": 0, "retries": 0, "retry_wait_seconds": 0.0,
                         "cache_corrupt": 0}
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
        self.counters["cache_corrupt"] = len(self.cache.corrupt)
        self.counters["requests"] += len(keys)
        self.counters["cache_hits"] += sum(r is not None for r in out)
        todo: dict[str, tuple[str, dict[str, Any]]] = {}
        for k, req, got in zip(keys, requests, out, strict=True):
            if got is None:
                todo.setdefault(k, req)  # identical requests in one call are sent once
        if todo and self.collecting is not None:
            self.collecting.update(todo)
            return out
        if todo:
            if self._loop is None:
                self._loop = _LoopThread()
            fetched = self._loop.run(self._gather(todo))
            out = [fetched.get(k, got) if got is None else got for k, got in zip(keys, out, strict=True)]
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

        tasks = [asyncio.ensure_future(one(k, e, b)) for k, (e, b) in todo.items()]
        try:
            return dict(await asyncio.gather(*tasks))
        except BaseException:
            # the first request that fails for good stops the call: the others are cancelled (gather alone
            # would leave them sending and retrying in the background after the run has stopped)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            bar.close()

    def _seconds(self, hint: float | datetime | None) -> float | None:
        """A Retry-After hint as seconds from now (a date minus the sender's clock)."""
        if isinstance(hint, datetime):
            return hint.timestamp() - self.clock()
        return hint

    async def _with_retries(self, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
        policy, waited = self.policy, 0.0
        for attempt in range(policy.retries + 1):
            self.counters["http_requests"] += 1
            try:
                return await asyncio.wait_for(self.send(endpoint, body), policy.timeout)
            except Exception as e:  # noqa: BLE001 - classified below; anything not retryable is re-raised
                retryable, hint = (True, None) if isinstance(e, asyncio.TimeoutError) else self.classify(e)
                what = f"{self.kind} backend, model {self.model!r}, {endpoint}: {type(e).__name__}: {_one_line(e)}"
                if not retryable:
                    raise ApiError(f"{what} (not retryable)") from None
                if attempt == policy.retries:
                    raise ApiError(f"{what} (gave up after {attempt} retries, {waited:.1f} s of waiting; records "
                                   "written so far are kept: run again to resume)", transient=True) from None
                delay = policy.delay(attempt, self._seconds(hint), self._rng)
                if waited + delay > policy.max_retry_seconds:
                    raise ApiError(f"{what} (retry budget spent: {waited:.1f} s of waiting over {attempt} retries, "
                                   f"the next wait of {delay:.1f} s would pass max_retry_seconds="
                                   f"{policy.max_retry_seconds:g}; records written so far are kept: run again to "
                                   "resume)", transient=True) from None
                waited += delay
                self.counters["retries"] += 1
                self.counters["retry_wait_seconds"] += delay
                await self.sleep(delay)
        raise AssertionError("unreachable")


def _one_line(e: BaseException) -> str:
    """An exception's message on one line (an ApiError is one sentence, whatever the server sent)."""
    return " ".join(str(e).split())[:500]
