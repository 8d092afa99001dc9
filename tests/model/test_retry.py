"""RetryPolicy decisions and Retry-After parsing, with no clock."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from kun.model.errors import (
    APIConnectionError,
    APIContextOverflowError,
    APIEmptyResponseError,
    APIProviderQuotaExhaustedError,
    APIProviderRateLimitError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
    StreamIdleTimeout,
    StreamProtocolError,
)
from kun.model.retry import GiveUp, Retry, RetryPolicy, format_wait, parse_retry_after

NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
RNG = random.Random(0)


def status(code: int, retry_after: float | None = None) -> APIStatusError:
    return APIStatusError("x", status_code=code, retry_after=retry_after)


@pytest.mark.parametrize(
    ("error", "in_stream", "expected"),
    [
        (status(429), False, True),
        (status(503), False, True),
        (status(500), False, False),
        (status(529, None), False, False),
        (status(529, None), True, True),
        (status(400), True, False),
        (APIProviderRateLimitError("x", status_code=429), False, True),
        (APIProviderQuotaExhaustedError("x", status_code=429), False, False),
        (APIProviderQuotaExhaustedError("x", status_code=429), True, False),
        (APIContextOverflowError("x", status_code=400), True, False),
        (APIConnectionError("x"), False, True),
        (APITimeoutError("x"), False, True),
        (APIEmptyResponseError("x"), False, True),
        (StreamIdleTimeout("x"), False, False),
        (StreamProtocolError("x"), True, False),
        (ChatProviderError("x", code="stream_truncated"), True, False),
    ],
)
def test_should_retry(error: ChatProviderError, in_stream: bool, expected: bool) -> None:
    assert RetryPolicy().should_retry(error, in_stream=in_stream) is expected


def test_transport_errors_can_be_excluded() -> None:
    policy = RetryPolicy(transport_errors=False)
    assert not policy.should_retry(APIConnectionError("x"), in_stream=False)
    assert not policy.should_retry(APIEmptyResponseError("x"), in_stream=False)
    assert policy.should_retry(status(429), in_stream=False)


def test_exponential_backoff_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [policy.backoff(n, RNG) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_jitter_only_shortens() -> None:
    policy = RetryPolicy(base_delay=2.0, jitter=0.5)
    rng = random.Random(7)
    delays = [policy.backoff(1, rng) for _ in range(200)]
    assert all(1.0 <= d <= 2.0 for d in delays)
    assert len(set(delays)) > 100


def test_decide_honours_retry_after_and_attempts() -> None:
    policy = RetryPolicy(max_attempts=3, jitter=0.0)
    assert policy.decide(status(429, 7.0), attempt=1, in_stream=False, rng=RNG) == Retry(7.0)
    assert policy.decide(status(503), attempt=2, in_stream=False, rng=RNG) == Retry(2.0)
    last = policy.decide(status(503), attempt=3, in_stream=False, rng=RNG)
    assert last == GiveUp("gave up after 3 attempts")
    assert policy.decide(status(400), attempt=1, in_stream=False, rng=RNG) == GiveUp()


def test_retry_after_above_the_cap_is_not_slept() -> None:
    policy = RetryPolicy(max_retry_after=60.0)
    decision = policy.decide(status(429, 61.0), attempt=1, in_stream=False, rng=RNG, now=NOW)
    assert isinstance(decision, GiveUp)
    assert "not retrying" in decision.note
    assert "Retry after 2025-03-01 12:01:01 UTC" in decision.note
    at_cap = policy.decide(status(429, 60.0), attempt=1, in_stream=False, rng=RNG, now=NOW)
    assert at_cap == Retry(60.0)


def test_policy_validates() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=1.5)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({}, None),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": " 2.5 "}, 2.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after-ms": "x", "retry-after": "9"}, 9.0),
        ({"retry-after": "Sat, 01 Mar 2025 12:00:30 GMT"}, 30.0),
        ({"retry-after": "Sat, 01 Mar 2025 11:59:00 GMT"}, 0.0),
    ],
)
def test_parse_retry_after(headers: dict[str, str], seconds: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == seconds


def test_an_http_date_counts_from_the_servers_date() -> None:
    headers = {
        "retry-after": "Sat, 01 Mar 2025 12:00:45 GMT",
        "date": "Sat, 01 Mar 2025 12:00:05 GMT",
    }
    assert parse_retry_after(headers) == 40.0


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(45, "45 s"), (1.5, "1.5 s"), (600, "10 min"), (3 * 3600, "3 h"), (1209600, "14 days")],
)
def test_format_wait(seconds: float, text: str) -> None:
    assert format_wait(seconds) == text
