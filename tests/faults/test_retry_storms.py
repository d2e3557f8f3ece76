"""A provider answering 429 / 503 for a while: the run waits it out within the documented bounds
(backends.http.RetryPolicy) on an injected clock, and a budget (max_retry_seconds) stops it cleanly.

The provider is a stand-in served on 127.0.0.1 (tests/fake_api.py) answering /v1/completions in the documented
OpenAI wire format (tests/fake_openai.py), reached through the real openai SDK (its own retries off). Refusals
carry Retry-After as RFC 9110 allows (delay-seconds or an HTTP date) or OpenAI's `retry-after-ms`, or nothing.
Time is a fake clock: the sender's sleep advances it, and the stand-in refuses while it is before the storm's
end, so minutes of storm take milliseconds."""
from __future__ import annotations

import asyncio
import email.utils
import math
import threading
from datetime import datetime, timezone

import pytest
from fake_api import FakeAPI
from fake_openai import completion

from mcqa_toolkit.backends import load_backend
from mcqa_toolkit.backends.http import ApiError, RetryPolicy
from mcqa_toolkit.datasets import load
from mcqa_toolkit.records.equality import assert_same_records
from mcqa_toolkit.records.store import RunDir
from mcqa_toolkit.run import Strategy, run

pytestmark = pytest.mark.faults
T0 = 1_700_000_000.25  # the fake clock's start (a quarter second past a whole second: dates round)
POLICY = RetryPolicy()  # the defaults the backends use (retries, backoff, max_backoff, max_retry_seconds)


class Clock:
    """The sender's clock and sleep: sleeping only moves the time on (and records the wait)."""

    def __init__(self) -> None:
        self.t, self.waits = T0, []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.t += seconds


class Storm:
    """A /v1/completions route refusing with `status` from the `start`-th request until the clock passes
    `end`, Retry-After in `mode`; it records the wait each refusal asks for (None: no header)."""

    def __init__(self, clock: Clock, status: int, mode: str, end: float, start: int = 1, value: float = 7.0):
        self.clock, self.status, self.mode, self.end, self.start, self.value = clock, status, mode, end, start, value
        self.asked: list[float | None] = []
        self.n = 0
        self.lock = threading.Lock()

    def __call__(self, req):
        with self.lock:
            self.n += 1
            now = self.clock.now()
            if self.n < self.start or now >= self.end:
                return 200, completion(req.json)
            headers, asked = {}, None
            if self.mode == "seconds":
                headers, asked = {"retry-after": f"{self.value:g}"}, self.value
            elif self.mode == "ms":
                headers, asked = {"retry-after-ms": f"{self.value * 1000:g}"}, self.value
            elif self.mode == "date":
                when = math.ceil(now) + self.value
                headers = {"retry-after": email.utils.format_datetime(datetime.fromtimestamp(when, timezone.utc),
                                                                      usegmt=True)}
                asked = when - now
            self.asked.append(asked)
            kind = "rate_limit_exceeded" if self.status == 429 else "server_busy"
            return self.status, {"error": {"message": "slow down", "type": "requests", "param": None,
                                           "code": kind}}, headers


@pytest.fixture(scope="module")
def items():
    return load("demo", language="pt")[:4]


async def _tasks_left() -> list[asyncio.Task]:
    """The tasks of the running event loop other than this one."""
    return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


def _backend(api, cache_dir, clock, **kw):
    backend = load_backend({"backend": "openai", "model": "fake-gemma", "base_url": api.url + "/v1",
                            "cache_dir": str(cache_dir), "concurrency": 1, **kw})
    backend.sender.sleep, backend.sender.clock = clock.sleep, clock.now  # the injected clock
    return backend


def _undisturbed(items, tmp_path):
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", lambda req: (200, completion(req.json)))
        return run(items, _backend(api, tmp_path / "c0", Clock()), Strategy.first_token(shuffles=2, style="enem"),
                   tmp_path / "undisturbed" / "run", progress=False)


def _allowed(asked: float | None, attempt: int) -> tuple[float, float]:
    """The documented wait before retry `attempt` (RetryPolicy): Retry-After clamped to [0, max_backoff],
    else backoff x 2^attempt capped at max_backoff, times [1, 1.1)."""
    if asked is not None:
        wait = min(max(asked, 0.0), POLICY.max_backoff)
        return wait, wait
    base = min(POLICY.backoff * 2 ** attempt, POLICY.max_backoff)
    return base, 1.1 * base


@pytest.mark.parametrize("status,mode,value,storm", [
    (429, "seconds", 7, 40), (503, "date", 9, 40), (429, "ms", 2.5, 12), (503, "none", 0, 25),
    (429, "seconds", 120, 100)], ids=["429-seconds", "503-http-date", "429-retry-after-ms", "503-no-header",
                                       "429-over-the-cap"])
def test_a_storm_is_waited_out_within_the_documented_bounds(items, tmp_path, figures, status, mode, value, storm):
    reference = _undisturbed(items, tmp_path)
    clock = Clock()
    refusing = Storm(clock, status, mode, end=T0 + storm, value=value)
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", refusing)
        backend = _backend(api, tmp_path / "cache", clock)
        records = run(items, backend, Strategy.first_token(shuffles=2, style="enem"), tmp_path / "storm" / "run",
                      progress=False)
    assert_same_records(records, reference)
    assert len(clock.waits) == len(refusing.asked) == backend.usage()["retries"] >= 2
    for attempt, (wait, asked) in enumerate(zip(clock.waits, refusing.asked, strict=True)):
        low, high = _allowed(asked, attempt)
        assert low <= wait <= high, f"retry {attempt}: waited {wait} s, documented [{low}, {high}]"
    assert clock.t >= T0 + storm and sum(clock.waits) == pytest.approx(backend.usage()["retry_wait_seconds"])
    figures.add("retry_storm", cases=1, refusals_waited_out=len(clock.waits),
                storm_seconds_simulated=round(sum(clock.waits), 1))


def test_the_retry_budget_stops_a_run_cleanly(items, tmp_path, figures):
    reference = _undisturbed(items, tmp_path)
    clock = Clock()
    refusing = Storm(clock, 429, "seconds", end=T0 + 3600, start=5, value=30)  # after 2 items: an hour of 429
    strategy = Strategy.first_token(shuffles=2, style="enem")
    out = tmp_path / "budget" / "run"
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", refusing)
        backend = _backend(api, tmp_path / "cache", clock, max_retry_seconds=120, probe=False)
        with pytest.raises(ApiError) as stopped:
            run(items, backend, strategy, out, progress=False)
        message = str(stopped.value)
        assert "\n" not in message and "retry budget spent: 120.0 s of waiting over 4 retries" in message
        assert "max_retry_seconds=120" in message and "run again to resume" in message
        assert sum(clock.waits) == 120 and len(RunDir(out).read_records()) == 4  # the first 2 items x 2 kept
        # the other request of the block was cancelled with the stop (at most started) and awaited before the error
        # was raised: nothing of it is left on the sender's event loop, so no request can be sent after the stop
        assert asyncio.run_coroutine_threadsafe(_tasks_left(), backend.sender._loop.loop).result(60) == []
        assert backend.usage()["http_requests"] <= 4 + 5 + 1 and sum(clock.waits) == 120
        clock.t = T0 + 3600  # the storm is over
        resumed_backend = _backend(api, tmp_path / "cache", clock, max_retry_seconds=120, probe=False)
        resumed = run(items, resumed_backend, strategy, out, progress=False)
    assert_same_records(resumed, reference)  # every record computed once, from a real answer
    assert resumed_backend.usage()["requests"] == resumed_backend.usage()["http_requests"] == 4  # the missing ones
    figures.add("retry_budget", cases=1, budget_seconds=120, records_kept_at_stop=4)


def test_a_storm_during_the_capability_probe_is_not_read_as_a_missing_capability(items, tmp_path):
    clock = Clock()
    with FakeAPI() as api:
        api.route("POST", "/v1/completions", Storm(clock, 503, "none", end=T0 + 3600))
        backend = _backend(api, tmp_path / "cache", clock, max_retry_seconds=30)
        with pytest.raises(ApiError, match="retry budget spent"):
            run(items, backend, Strategy.first_token(), tmp_path / "probe" / "run", progress=False)
