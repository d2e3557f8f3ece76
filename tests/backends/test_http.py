"""backends.http: Retry-After as the SDKs read it (retry-after-ms, delay-seconds, HTTP date), the documented
wait of RetryPolicy, and which statuses are retried. Storms through a real client: tests/faults/test_retry_storms."""
from __future__ import annotations

import random
from datetime import datetime, timezone

import pytest

from mcqa_toolkit.backends.http import RetryPolicy, classify_status, retry_after


def test_retry_after_forms():
    assert retry_after({"retry-after": "7"}) == 7.0 and retry_after({"retry-after": "2.5"}) == 2.5
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5  # the ms header wins (SDKs)
    when = retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert when == datetime(2015, 10, 21, 7, 28, tzinfo=timezone.utc)
    assert retry_after({"retry-after": "soon"}) is None and retry_after({}) is None and retry_after(None) is None
    assert retry_after({"retry-after": "inf"}) is None and retry_after({"retry-after-ms": "x", "retry-after": "3"}) == 3


def test_documented_waits():
    policy, rng = RetryPolicy(), random.Random(0)
    assert policy.delay(0, 7.0, rng) == 7.0 and policy.delay(3, 500.0, rng) == policy.max_backoff == 60.0
    assert policy.delay(0, -3.0, rng) == 0.0  # a date in the past: retry at once
    for attempt in range(10):
        base = min(2 ** attempt, 60)
        assert all(base <= policy.delay(attempt, None, rng) < 1.1 * base for _ in range(50))


class StatusError(Exception):
    def __init__(self, status_code, headers=None, body=None):
        self.status_code, self.body = status_code, body
        self.response = type("R", (), {"headers": headers or {}})()


class Timeout(Exception):
    pass


@pytest.mark.parametrize("code,retried", [(400, False), (401, False), (404, False), (408, True), (409, True),
                                          (429, True), (500, True), (501, False), (503, True), (505, False),
                                          (529, True)])
def test_which_statuses_are_retried(code, retried):
    assert classify_status(StatusError(code, {"retry-after": "4"}), (Timeout,), StatusError) == (retried, 4.0)
    assert classify_status(Timeout(), (Timeout,), StatusError) == (True, None)


def test_a_spent_quota_is_not_retried():
    """OpenAI answers 429 {"error": {"type": "insufficient_quota", "code": "insufficient_quota"}} when the
    account has no credit left (provider contracts, section 1.4): waiting never helps."""
    spent = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "param": None,
                       "code": "insufficient_quota"}}
    assert classify_status(StatusError(429, body=spent), (Timeout,), StatusError) == (False, None)
    limited = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    assert classify_status(StatusError(429, {"retry-after": "2"}, limited), (Timeout,), StatusError) == (True, 2.0)
