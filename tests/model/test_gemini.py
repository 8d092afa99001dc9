"""Gemini streams: the decoder, against Google's SDK on random streams, the
fake provider's renderer, URLs and auth, and error classification."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelRequest,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.classify import classify_response, classify_stream_error
from kun.model.client import HttpModelClient
from kun.model.endpoints import resolve_endpoint
from kun.model.errors import (
    APIProviderQuotaExhaustedError,
    APIProviderRateLimitError,
    APIStatusError,
)
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.model.usage import normalize_usage
from kun.model.wire import materialize
from kun.testing.wire import render_body, render_error, render_stream

from .gemini_sdk import SdkReader, cut, kun_outcome, random_stream
from .support import calls, decode_everywhere, error, reasoning, stop_reason, text, usage

pytestmark = pytest.mark.anyio


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + msgspec.json.encode(e) + b"\r\n\r\n" for e in events)


def parts(*items: dict[str, Any], **candidate: Any) -> dict[str, Any]:
    body = {"candidates": [{"content": {"role": "model", "parts": list(items)}, **candidate}]}
    return {**body, "modelVersion": "gemini-2.5-flash", "responseId": "resp-7"}


def test_text_thoughts_calls_usage_and_the_end() -> None:
    data = sse(
        parts({"text": "Let me", "thought": True}),
        parts({"text": " see."}),
        parts(
            {"functionCall": {"name": "read_file", "args": {"path": "a.py"}}},
            {"functionCall": {"name": "grep", "args": {}}},
            finishReason="STOP",
        ),
        {
            "usageMetadata": {
                "promptTokenCount": 1200,
                "candidatesTokenCount": 30,
                "thoughtsTokenCount": 70,
                "cachedContentTokenCount": 1000,
            }
        },
    )
    chunks = decode_everywhere("gemini", data).chunks
    assert reasoning(chunks) == "Let me" and text(chunks) == " see."
    assert [(c[1], c[2]) for c in calls(chunks)] == [("read_file", {"path": "a.py"}), ("grep", {})]
    assert all(c[0].startswith(SYNTHETIC_ID_PREFIX) for c in calls(chunks))
    assert stop_reason(chunks) == "tool_calls", "Gemini says STOP after calls"
    found = usage(chunks)
    assert found is not None and found.request_id == "resp-7"
    assert found.model == "gemini-2.5-flash"
    assert found.usage == UsageSnapshot(
        prompt_tokens=1200,
        completion_tokens=100,
        reasoning_tokens=70,
        cache_hit_tokens=1000,
        cache_miss_tokens=200,
    )


def test_a_call_id_gemini_gives_is_kept() -> None:
    data = sse(
        parts({"functionCall": {"id": "fc-9", "name": "t", "args": {}}}, finishReason="STOP")
    )
    assert calls(decode_everywhere("gemini", data).chunks)[0][0] == "fc-9"


def test_signatures_ride_on_the_part_they_came_with() -> None:
    data = sse(
        parts({"text": "think", "thought": True, "thoughtSignature": "VA=="}),
        parts({"text": "Hello"}),
        parts({"text": "", "thoughtSignature": "WA=="}),
        parts(
            {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": "Qw=="},
            {"functionCall": {"name": "b", "args": {}}},
            finishReason="STOP",
        ),
    )
    chunks = decode_everywhere("gemini", data).chunks
    signed = [
        (type(c).__name__, c.thought_signature)
        for c in chunks
        if isinstance(c, TextDeltaChunk | ReasoningDeltaChunk | ToolCallCompleteChunk)
        and c.thought_signature
    ]
    assert signed == [
        ("ReasoningDeltaChunk", "VA=="),
        ("TextDeltaChunk", "WA=="),
        ("ToolCallCompleteChunk", "Qw=="),
    ]
    second = [c for c in chunks if isinstance(c, ToolCallCompleteChunk)][1]
    assert second.thought_signature is None


def test_a_leading_empty_signed_part_goes_to_the_next_part() -> None:
    data = sse(
        parts({"text": "", "thoughtSignature": "Rg=="}, {"functionCall": {"name": "a"}}),
        parts(finishReason="STOP"),
    )
    (done,) = [
        c for c in decode_everywhere("gemini", data).chunks if isinstance(c, ToolCallCompleteChunk)
    ]
    assert done.thought_signature == "Rg==" and bytes(done.arguments) == b"{}"


@pytest.mark.parametrize(
    ("reason", "called", "end"),
    [
        ("STOP", False, "stop"),
        ("MAX_TOKENS", False, "length"),
        ("MAX_TOKENS", True, "tool_calls"),
        ("SAFETY", False, "content_filter"),
        ("RECITATION", False, "content_filter"),
        ("PROHIBITED_CONTENT", False, "content_filter"),
        ("OTHER", False, "other"),
        ("MALFORMED_FUNCTION_CALL", False, "error:malformed_function_call"),
        ("UNEXPECTED_TOOL_CALL", True, "error:unexpected_tool_call"),
        (None, False, "error:stream_truncated"),
    ],
)
def test_finish_reasons(reason: str | None, called: bool, end: str) -> None:
    items = [{"functionCall": {"name": "a", "args": {}}}] if called else [{"text": "x"}]
    candidate = {"finishReason": reason} if reason else {}
    chunks = decode_everywhere("gemini", sse(parts(*items, **candidate))).chunks
    last = chunks[-1]
    got = f"error:{last.code}" if isinstance(last, ErrorChunk) else stop_reason(chunks)
    assert got == end
    if end.startswith("error:") and end != "error:stream_truncated":
        assert not calls(chunks), "a broken answer's calls are never run"
        assert reason in error(chunks).message


def test_a_blocked_prompt_is_content_filter() -> None:
    data = sse(
        {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}}
    )
    chunks = decode_everywhere("gemini", data).chunks
    assert stop_reason(chunks) == "content_filter"


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        ("UNAVAILABLE", "unavailable", APIStatusError),
        ("RESOURCE_EXHAUSTED", "resource_exhausted", APIProviderQuotaExhaustedError),
        ("INVALID_ARGUMENT", "invalid_argument", APIStatusError),
    ],
)
def test_an_error_in_the_stream(status: str, code: str, kind: type[Exception]) -> None:
    data = sse(parts({"text": "x"}), {"error": {"code": 503, "message": "busy", "status": status}})
    chunk = error(decode_everywhere("gemini", data).chunks)
    assert (chunk.code, chunk.message) == (code, "busy")
    classified = classify_stream_error(chunk.code, chunk.message)
    assert isinstance(classified, kind)
    assert classified.is_retryable == (status == "UNAVAILABLE")


GOOGLE_429_RATE = (
    b'{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",'
    b' "status": "RESOURCE_EXHAUSTED", "details": [{"@type": '
    b'"type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}]}}'
)
GOOGLE_429_QUOTA = (
    b'{"error": {"code": 429, "message": "You exceeded your current quota. Quota exceeded for'
    b' metric: generate_content_free_tier_requests, limit: 0", "status": "RESOURCE_EXHAUSTED"}}'
)


GOOGLE_429_DAILY = (
    b'{"error": {"code": 429, "message": "You exceeded your current quota.",'
    b' "status": "RESOURCE_EXHAUSTED", "details": [{"@type":'
    b' "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric":'
    b' "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId":'
    b' "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "quotaValue": "250"}]},'
    b' {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"}]}}'
)


def test_a_daily_quota_is_not_retried_whatever_the_retry_delay() -> None:
    daily = classify_response(429, GOOGLE_429_DAILY)
    assert isinstance(daily, APIProviderQuotaExhaustedError) and not daily.is_retryable


def test_google_http_errors_are_classified() -> None:
    rate = classify_response(429, GOOGLE_429_RATE)
    assert isinstance(rate, APIProviderRateLimitError) and rate.retry_after == 17
    assert rate.is_retryable
    quota = classify_response(429, GOOGLE_429_QUOTA)
    assert isinstance(quota, APIProviderQuotaExhaustedError) and not quota.is_retryable
    body = b'{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}'
    unavailable = classify_response(503, body)
    assert unavailable.is_retryable and unavailable.code == "http_503"
    invalid = b'{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}'
    assert not classify_response(400, invalid).is_retryable
    for status in (401, 403):
        denied = b'{"error": {"code": %d, "message": "no", "status": "PERMISSION_DENIED"}}' % status
        refused = classify_response(status, denied)
        assert not refused.is_retryable and "API key" in str(refused)


def test_materialize_a_generate_content_body() -> None:
    body = msgspec.json.encode(
        parts(
            {"text": "t", "thought": True},
            {"text": "answer"},
            {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "Uw=="},
            finishReason="STOP",
        )
    )
    chunks = materialize("gemini", body)
    assert reasoning(chunks) == "t" and text(chunks) == "answer"
    (done,) = [c for c in chunks if isinstance(c, ToolCallCompleteChunk)]
    assert done.thought_signature == "Uw==" and stop_reason(chunks) == "tool_calls"


def test_usage_semantics() -> None:
    """Gemini's candidates count leaves the thoughts out; kun's completion
    holds them. The prompt holds the cached part and the tool-use prompt."""
    got = normalize_usage(
        {
            "promptTokenCount": 100,
            "toolUsePromptTokenCount": 10,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 20,
            "cachedContentTokenCount": 60,
        }
    )
    assert (got.prompt_tokens, got.completion_tokens, got.reasoning_tokens) == (110, 25, 20)
    assert (got.cache_hit_tokens, got.cache_miss_tokens) == (60, 50)


# -- the renderer (fake provider) -------------------------------------------------


def settled(
    call_id: str, name: str, arguments: str, index: int, signature: str | None = None
) -> ToolCallCompleteChunk:
    return ToolCallCompleteChunk(
        call_id=call_id,
        name=name,
        arguments=msgspec.Raw(arguments.encode()),
        arguments_text=arguments,
        index=index,
        thought_signature=signature,
    )


def test_rendered_chunks_decode_back() -> None:
    first = f"{SYNTHETIC_ID_PREFIX}0"
    chunks: list[ModelStreamChunk] = [
        ReasoningDeltaChunk(text="hm", thought_signature="UQ=="),
        TextDeltaChunk(text="Reading\u2028a.py"),
        ToolCallDeltaChunk(call_id=first, name="read_file", arguments='{"path":"a.py"}'),
        ToolCallDeltaChunk(call_id="fc-2", name="grep", arguments='{"q":"x"}', index=1),
        settled(first, "read_file", '{"path":"a.py"}', 0, "Uw=="),
        settled("fc-2", "grep", '{"q":"x"}', 1),
        UsageChunk(
            usage=UsageSnapshot(
                prompt_tokens=10,
                completion_tokens=7,
                reasoning_tokens=3,
                cache_hit_tokens=4,
                cache_miss_tokens=6,
            ),
            request_id="r-1",
            model="gemini-2.5-flash",
        ),
        CompletedChunk(stop_reason="tool_calls"),
    ]
    for crlf in (False, True):
        decoded = decode_everywhere("gemini", render_stream("gemini", chunks, crlf=crlf)).chunks
        assert list(decoded) == chunks
    whole = materialize("gemini", render_body("gemini", chunks))
    assert text(whole) == "Reading\u2028a.py" and len(calls(whole)) == 2


def test_rendered_failures_decode_back() -> None:
    broken = [ErrorChunk(message="bad call", code="malformed_function_call")]
    assert error(decode_everywhere("gemini", render_stream("gemini", broken)).chunks).code == (
        "malformed_function_call"
    )
    busy = [TextDeltaChunk(text="x"), ErrorChunk(message="busy", code="unavailable")]
    assert list(decode_everywhere("gemini", render_stream("gemini", busy)).chunks) == busy
    cut_short = [TextDeltaChunk(text="x"), CompletedChunk()]
    truncated = decode_everywhere("gemini", render_stream("gemini", cut_short, finish_reason=False))
    assert error(truncated.chunks).code == "stream_truncated"
    assert msgspec.json.decode(render_error("gemini", "slow down", "rate_limit_error", 429)) == {
        "error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}
    }


# -- URLs and auth ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "vertex", "stream", "url"),
    [
        (
            "https://generativelanguage.googleapis.com",
            None,
            True,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        ),
        (
            "https://generativelanguage.googleapis.com/v1beta/",
            None,
            False,
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent",
        ),
        (
            "https://us-central1-aiplatform.googleapis.com",
            ("proj-1", "us-central1"),
            True,
            "https://us-central1-aiplatform.googleapis.com/v1/projects/proj-1/locations/us-central1"
            "/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        ),
    ],
)
def test_gemini_urls(base: str, vertex: tuple[str, str] | None, stream: bool, url: str) -> None:
    endpoint = resolve_endpoint(
        base, "gemini", model="gemini-2.5-flash", stream=stream, vertex=vertex
    )
    assert (endpoint.url, endpoint.wire_format) == (url, "gemini")


def test_a_custom_gemini_endpoint_is_used_as_is() -> None:
    url = "https://relay.example/google/models/g:streamGenerateContent"
    assert resolve_endpoint(url, "custom_endpoint").url == f"{url}?alt=sse"


class _Recorder:
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        body = render_stream("gemini", [TextDeltaChunk(text="ok"), CompletedChunk()])
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)


@pytest.mark.parametrize("vertex", [None, ("proj-1", "global")])
async def test_the_key_goes_in_a_header_never_in_the_url(vertex: tuple[str, str] | None) -> None:
    recorder = _Recorder()
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as http:
        base = (
            "https://aiplatform.googleapis.com"
            if vertex
            else "https://generativelanguage.googleapis.com"
        )
        model = HttpModelClient(
            "google", "gemini-2.5-flash", base, "gemini", api_key="sekrit", http=http, vertex=vertex
        )
        got = [c async for c in model.stream(ModelRequest(system_prompt="s"))]
    assert isinstance(got[-1], CompletedChunk) and text(got) == "ok"
    (sent,) = recorder.requests
    assert "sekrit" not in str(sent.url)
    if vertex is None:
        assert sent.headers["x-goog-api-key"] == "sekrit" and "authorization" not in sent.headers
    else:
        assert sent.headers["authorization"] == "Bearer sekrit"
        assert "x-goog-api-key" not in sent.headers
        assert "/projects/proj-1/locations/global/publishers/google/models/" in sent.url.path
    assert "model" not in msgspec.json.decode(sent.content)


# -- the differential test against the SDK ------------------------------------------


@pytest.fixture(scope="module")
def sdk() -> Iterator[SdkReader]:
    logging.getLogger("google_genai").setLevel(logging.ERROR)
    reader = SdkReader()
    yield reader
    reader.close()


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(0, 2**32 - 1))
def test_kun_reads_what_googles_sdk_reads(sdk: SdkReader, seed: int) -> None:
    """A random well-formed stream cut into random byte pieces: text,
    thoughts, calls (name, parsed arguments, order), the ending and the
    usage agree with the SDK's own parsing and combining of the chunks
    (``tools/diff_gemini_sdk.py`` runs tens of thousands)."""
    rng = random.Random(seed)
    pieces = cut(random_stream(rng), rng)
    assert kun_outcome(pieces) == sdk.outcome(pieces)
