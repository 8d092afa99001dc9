"""Resending through the client: statuses, Retry-After, quota, the
stream_options fallback, error events inside a 200 stream, transport
failures. Sleeps are recorded, never waited."""

from __future__ import annotations

from contextlib import aclosing

import anyio
import httpx
import pytest

from kun.contracts.model import ModelStreamChunk, UsageChunk
from kun.model.errors import (
    APIConnectionError,
    APIProviderQuotaExhaustedError,
    APIProviderRateLimitError,
    APIStatusError,
    error_from_chunk,
)
from kun.model.retry import RetryPolicy

from .fake_http import REQUEST, Script, Sleeps, Stream, client, collect, failing, json_answer, sse
from .support import error, fixture, stop_reason, text

pytestmark = pytest.mark.anyio

OK = sse(fixture("cc_plain_text.sse"))
DATE = "Sat, 01 Mar 2025 12:00:00 GMT"
RATE_LIMITED = {"error": {"message": "Rate limit reached", "type": "requests", "code": None}}


def usages(chunks: list[ModelStreamChunk]) -> int:
    return sum(isinstance(c, UsageChunk) for c in chunks)


async def test_429_with_retry_after_then_success() -> None:
    sleeps = Sleeps()
    script = Script(json_answer(429, RATE_LIMITED, {"retry-after": "7"}), OK)
    chunks = await collect(client(script, sleep=sleeps))
    assert sleeps.delays == [7.0]
    assert script.posts == 2
    assert text(chunks) == "Hello, world!"
    assert stop_reason(chunks) == "stop"


async def test_retry_after_ms_and_http_date_are_honoured() -> None:
    sleeps = Sleeps()
    script = Script(
        json_answer(429, RATE_LIMITED, {"retry-after-ms": "1500"}),
        json_answer(503, b"busy", {"retry-after": "Sat, 01 Mar 2025 12:00:12 GMT", "date": DATE}),
        OK,
    )
    await collect(client(script, sleep=sleeps))
    assert sleeps.delays == [1.5, 12.0]


async def test_503_five_times_is_an_error_chunk() -> None:
    sleeps = Sleeps()
    script = Script(json_answer(503, {"error": {"message": "Service Unavailable"}}))
    chunks = await collect(client(script, sleep=sleeps))
    last = error(chunks)
    assert script.posts == 5
    assert sleeps.delays == [1.0, 2.0, 4.0, 8.0]
    assert last.code == "http_503"
    assert "gave up after 5 attempts" in last.message
    assert error_from_chunk(last).is_retryable


async def test_backoff_jitter_only_shortens_the_wait() -> None:
    sleeps = Sleeps()
    script = Script(json_answer(503, b""))
    await collect(client(script, sleep=sleeps, retry=RetryPolicy(jitter=0.5)))
    for attempt, delay in enumerate(sleeps.delays, start=1):
        assert 2.0 ** (attempt - 1) * 0.5 <= delay <= 2.0 ** (attempt - 1)


async def test_rw19_quota_exhausted_429_is_not_retried() -> None:
    sleeps = Sleeps()
    body = {
        "error": {
            "message": "You exceeded your current quota, please check your plan.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    script = Script(json_answer(429, body, {"retry-after": "1"}))
    last = error(await collect(client(script, sleep=sleeps)))
    assert script.posts == 1
    assert sleeps.delays == []
    assert last.code == "quota_exhausted"
    assert "will not retry" in last.message
    assert isinstance(error_from_chunk(last), APIProviderQuotaExhaustedError)


async def test_rw19_retry_after_above_the_cap_fails_at_once_saying_when() -> None:
    sleeps = Sleeps()
    headers = {"retry-after": "1209600", "date": DATE}
    script = Script(json_answer(429, RATE_LIMITED, headers))
    last = error(await collect(client(script, sleep=sleeps)))
    assert script.posts == 1
    assert sleeps.delays == []
    assert last.code == "rate_limited"
    assert "14 days" in last.message
    assert "Retry after 2025-03-15 12:00:00 UTC" in last.message
    assert isinstance(error_from_chunk(last), APIProviderRateLimitError)


@pytest.mark.parametrize(
    ("status", "complaint"),
    [
        (400, b'{"error":{"message":"Unrecognized request argument: stream_options"}}'),
        (422, b'{"detail":[{"loc":["body","include_usage"],"msg":"extra fields"}]}'),
    ],
)
async def test_rw11_stream_options_rejected_resend_once_and_remember(
    status: int, complaint: bytes
) -> None:
    sleeps = Sleeps()
    script = Script(json_answer(status, complaint), OK)
    model = client(script, sleep=sleeps, retry=RetryPolicy(max_attempts=1))
    chunks = await collect(model)
    assert text(chunks) == "Hello, world!"
    first, second = script.bodies
    assert "stream_options" in first
    assert "stream_options" not in second
    assert sleeps.delays == []
    await collect(model.with_thinking("high"))
    assert script.posts == 3
    assert "stream_options" not in script.bodies[2]


async def test_stream_options_fallback_happens_once() -> None:
    complaint = b'{"error":{"message":"stream_options is not supported"}}'
    script = Script(json_answer(400, complaint))
    last = error(await collect(client(script)))
    assert script.posts == 2
    assert last.code == "http_400"


async def test_an_unrelated_400_is_not_resent() -> None:
    script = Script(json_answer(400, {"error": {"message": "bad temperature"}}), OK)
    last = error(await collect(client(script)))
    assert script.posts == 1
    assert "bad temperature" in last.message


async def test_rw14_overloaded_event_before_any_text_is_retried() -> None:
    sleeps = Sleeps()
    script = Script(sse(fixture("msg_rw14_overloaded_error.sse")), sse(fixture("msg_text.sse")))
    chunks = await collect(client(script, "messages", sleep=sleeps))
    assert script.posts == 2
    assert len(sleeps.delays) == 1
    assert text(chunks) == "Hello!"
    assert stop_reason(chunks) == "stop"
    assert usages(chunks) == 1


async def test_overloaded_event_after_text_is_final() -> None:
    head = fixture("msg_text.sse").split(b"event: content_block_stop")[0]
    tail = (
        b"event: error\n"
        b'data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    script = Script(sse(head + tail), sse(fixture("msg_text.sse")))
    chunks = await collect(client(script, "messages"))
    last = error(chunks)
    assert script.posts == 1
    assert text(chunks) == "Hello!"
    assert last.code == "overloaded"
    assert usages(chunks) == 1
    assert isinstance(chunks[-2], UsageChunk)
    failure = error_from_chunk(last)
    assert isinstance(failure, APIStatusError) and failure.status_code == 529


async def test_http_529_is_retried_only_when_listed() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    default = Script(json_answer(529, body), sse(fixture("msg_text.sse")))
    assert error(await collect(client(default, "messages"))).code == "overloaded"
    listed = Script(json_answer(529, body), sse(fixture("msg_text.sse")))
    policy = RetryPolicy(statuses=(429, 503, 529), jitter=0.0)
    chunks = await collect(client(listed, "messages", retry=policy))
    assert stop_reason(chunks) == "stop"


async def test_connection_error_is_retried_then_reported_without_proxy_hint() -> None:
    sleeps = Sleeps()
    script = Script(failing(httpx.ConnectError("[Errno 111] Connection refused")))
    last = error(await collect(client(script, sleep=sleeps)))
    assert script.posts == 5
    assert last.code == "connection_error"
    assert "Connection refused" in last.message
    assert "proxy" not in last.message
    assert isinstance(error_from_chunk(last), APIConnectionError)


async def test_transport_retries_can_be_turned_off() -> None:
    script = Script(failing(httpx.ConnectTimeout("")))
    policy = RetryPolicy(transport_errors=False)
    last = error(await collect(client(script, retry=policy)))
    assert script.posts == 1
    assert last.code == "timeout"
    assert "ConnectTimeout" in last.message


async def test_connection_broken_after_text_is_final() -> None:
    head = fixture("cc_plain_text.sse").split(b"\n\n")
    stream = Stream([b"\n\n".join(head[:3]) + b"\n\n"], fail=httpx.ReadError("reset by peer"))
    script = Script(sse(stream), OK)
    chunks = await collect(client(script))
    assert script.posts == 1
    assert text(chunks) == "Hello, world"
    assert error(chunks).code == "connection_error"
    assert stream.closed


async def test_empty_200_is_retried() -> None:
    script = Script(sse(b""), OK)
    chunks = await collect(client(script))
    assert script.posts == 2
    assert stop_reason(chunks) == "stop"


async def test_the_retry_sleep_observes_abort() -> None:
    script = Script(json_answer(429, RATE_LIMITED, {"retry-after": "30"}), OK)
    model = client(script, sleep=anyio.sleep)
    chunks: list[ModelStreamChunk] = []
    with anyio.fail_after(10), anyio.move_on_after(0.05) as scope:
        async with aclosing(model.stream(REQUEST)) as stream:
            async for chunk in stream:
                chunks.append(chunk)
    assert scope.cancelled_caught
    assert chunks == []
    assert script.posts == 1


async def test_404_says_to_check_the_base_url() -> None:
    script = Script(json_answer(404, {"error": {"message": "Not Found"}}))
    last = error(await collect(client(script)))
    assert last.code == "http_404"
    assert "Check the base URL and endpoint format" in last.message
    assert "https://api.example.test/v1/chat/completions" in last.message
