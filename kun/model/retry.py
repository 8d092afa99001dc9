"""When a failed model request is sent again, and after how long.

A request is resent only while nothing of its answer has reached the caller:
until then a resend is idempotent; after it, the caller would see the answer
twice. Within that window :meth:`RetryPolicy.decide` resends:

* an HTTP status listed in ``statuses`` (default 429 and 503), unless the
  error is not retryable (quota exhaustion is never retried, whatever its
  status);
* an error event inside a 200 stream whose error is retryable (Anthropic's
  ``overloaded_error`` before any text), whatever ``statuses`` says: there
  is no HTTP status to list;
* a connection failure, a transport timeout or an empty 200, when
  ``transport_errors`` is on (the default).

An idle timeout is not resent here: the loop decides (it has already waited
the whole timeout once, and only it knows whether anything of the step was
recorded). It sends the step once more when nothing was, with a
``stream_idle_retry`` warning, and otherwise fails the turn
(:mod:`kun.runtime.loop`).

The wait is exponential (``base_delay * 2**(attempt-1)``, capped at
``max_delay``) with jitter that only shortens it, so clients that failed
together do not come back together. A ``Retry-After`` (seconds, an HTTP date,
or OpenAI's ``retry-after-ms``) replaces the computed wait; one longer than
``max_retry_after`` is not slept at all: the request fails at once with a
message saying when to try again, because a loop silently asleep for days
looks exactly like a hang.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from kun.model.errors import (
    APIConnectionError,
    APIEmptyResponseError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
    StreamIdleTimeout,
)

__all__ = ["GiveUp", "Retry", "RetryPolicy", "format_wait", "parse_retry_after", "server_date"]


@dataclass(frozen=True, slots=True)
class Retry:
    """Send again after ``delay`` seconds."""

    delay: float


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Do not send again; ``note`` (possibly empty) says why, for the message."""

    note: str = ""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How the HTTP client resends (see the module docstring).

    ``max_attempts`` counts every send, the first included. ``jitter`` is the
    largest fraction by which a computed wait is shortened (0 disables it).
    """

    statuses: tuple[int, ...] = (429, 503)
    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 60.0
    jitter: float = 0.2
    transport_errors: bool = True

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter must be between 0 and 1")

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """The wait after failed attempt number ``attempt`` (1-based)."""
        delay = min(self.max_delay, self.base_delay * 2.0 ** max(0, attempt - 1))
        return delay * (1.0 - self.jitter * rng.random())

    def should_retry(self, error: ChatProviderError, *, in_stream: bool) -> bool:
        """Whether ``error`` is worth another send, ignoring attempts and waits."""
        if not error.is_retryable or isinstance(error, StreamIdleTimeout):
            return False
        if isinstance(error, APIStatusError):
            return in_stream or error.status_code in self.statuses
        if isinstance(error, (APIConnectionError, APITimeoutError, APIEmptyResponseError)):
            return self.transport_errors
        return False

    def decide(
        self,
        error: ChatProviderError,
        *,
        attempt: int,
        in_stream: bool,
        rng: random.Random,
        now: datetime | None = None,
    ) -> Retry | GiveUp:
        """What to do after failed attempt ``attempt`` (1-based), before any of
        the answer reached the caller. ``now`` (the server's ``Date`` when it
        sent one) dates the "retry after" of a wait above the cap."""
        if not self.should_retry(error, in_stream=in_stream):
            return GiveUp()
        wait = error.retry_after if isinstance(error, APIStatusError) else None
        if wait is not None and wait > self.max_retry_after:
            when = (now or datetime.now(UTC)) + timedelta(seconds=wait)
            return GiveUp(
                f"the provider asks to wait {format_wait(wait)}, longer than the "
                f"{format_wait(self.max_retry_after)} kun waits; not retrying. "
                f"Retry after {when.strftime('%Y-%m-%d %H:%M:%S UTC')}"
            )
        if attempt >= self.max_attempts:
            return GiveUp(f"gave up after {attempt} attempts")
        return Retry(wait if wait is not None else self.backoff(attempt, rng))


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """The wait a response asks for, in seconds: ``retry-after-ms``, else
    ``Retry-After`` as seconds or as an HTTP date (counted from ``now``, else
    from the response's ``Date``, else from the local clock). ``None`` when
    absent or unreadable; a date in the past is 0."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        seconds = _number(millis)
        if seconds is not None:
            return seconds / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _number(raw)
    if seconds is not None:
        return seconds
    when = _http_date(raw)
    if when is None:
        return None
    reference = now or _http_date(headers.get("date") or "") or datetime.now(UTC)
    return max(0.0, (when - reference).total_seconds())


def server_date(headers: Mapping[str, str]) -> datetime | None:
    """The response's ``Date``, if it sent a readable one."""
    return _http_date(headers.get("date") or "")


def format_wait(seconds: float) -> str:
    """A wait for people: ``45 s``, ``12 min``, ``3 h``, ``14 days``."""
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{round(seconds / 60)} min"
    if seconds < 172800:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400)} days"


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return max(0.0, value)


def _http_date(text: str) -> datetime | None:
    if not text:
        return None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
