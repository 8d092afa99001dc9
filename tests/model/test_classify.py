"""Provider errors to kun's hierarchy: codes first, wordings second, status
last; HTTP bodies and stream error events agree."""

from __future__ import annotations

import msgspec
import pytest

from kun.contracts.model import ErrorChunk
from kun.model.classify import classify_response, classify_stream_error, error_fields
from kun.model.errors import (
    RETRYABLE_STATUSES,
    APIConnectionError,
    APIContextOverflowError,
    APIEmptyResponseError,
    APIProviderQuotaExhaustedError,
    APIProviderRateLimitError,
    APIRequestTooLargeError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
    StreamIdleTimeout,
    StreamProtocolError,
    error_from_chunk,
)


def body(**fields: object) -> bytes:
    return msgspec.json.encode(fields)


def anthropic(kind: str, message: str) -> bytes:
    return body(type="error", error={"type": kind, "message": message})


def google(code: int, message: str, status: str) -> bytes:
    return body(error={"code": code, "message": message, "status": status})


QUOTA = [
    (429, body(error={"message": "quota", "type": "insufficient_quota"})),
    (429, google(429, "Quota exceeded for metric: x, limit: 0", "RESOURCE_EXHAUSTED")),
    (429, b"[" + google(429, "Resource has been exhausted", "RESOURCE_EXHAUSTED") + b"]"),
    (402, body(error={"message": "Insufficient Balance", "type": "unknown_error"})),
    (400, anthropic("invalid_request_error", "Your credit balance is too low to access the API")),
    (429, body(error={"message": "账户余额不足"})),
]

OVERFLOW = [
    (400, body(error={"message": "max ctx", "code": "context_length_exceeded"})),
    (400, anthropic("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum")),
    (
        400,
        body(
            error={
                "message": "This model's maximum context length is 65536 tokens. "
                "However, you requested about 70000 tokens"
            }
        ),
    ),
    (400, body(error={"message": "Input is too long for requested model."})),
    (400, body(error={"message": "Invalid request: exceeded model token limit: 131072"})),
    (
        400,
        google(
            400,
            "The input token count (1200000) exceeds the maximum number of tokens allowed "
            "(1048576).",
            "INVALID_ARGUMENT",
        ),
    ),
]


@pytest.mark.parametrize(("status", "raw"), QUOTA)
def test_quota_exhaustion_is_never_retryable(status: int, raw: bytes) -> None:
    error = classify_response(status, raw)
    assert isinstance(error, APIProviderQuotaExhaustedError)
    assert not isinstance(error, APIProviderRateLimitError)
    assert not error.is_retryable
    assert error.code == "quota_exhausted"
    assert "will not retry" in str(error)


@pytest.mark.parametrize(("status", "raw"), OVERFLOW)
def test_context_overflow(status: int, raw: bytes) -> None:
    error = classify_response(status, raw)
    assert isinstance(error, APIContextOverflowError)
    assert error.code == "context_overflow"
    assert not error.is_retryable


def test_resource_exhausted_with_a_retry_delay_is_a_rate_limit() -> None:
    raw = body(
        error={
            "code": 429,
            "message": "Quota exceeded for metric: requests per minute, limit: 15",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}],
        }
    )
    error = classify_response(429, raw)
    assert isinstance(error, APIProviderRateLimitError)
    assert error.retry_after == 37.0


def test_a_code_beats_a_misleading_wording() -> None:
    raw = body(
        error={
            "message": "Request too large for gpt-4o on tokens per min (TPM): Limit 30000",
            "type": "tokens",
            "code": "rate_limit_exceeded",
        }
    )
    assert isinstance(classify_response(429, raw), APIProviderRateLimitError)


@pytest.mark.parametrize(
    ("status", "raw", "cls", "code"),
    [
        (429, b"Too Many Requests", APIProviderRateLimitError, "rate_limited"),
        (413, b"Request Entity Too Large", APIRequestTooLargeError, "request_too_large"),
        (413, anthropic("request_too_large", "big"), APIRequestTooLargeError, "request_too_large"),
        (529, anthropic("overloaded_error", "Overloaded"), APIStatusError, "overloaded"),
        (500, body(error={"message": "boom", "type": "server_error"}), APIStatusError, "http_500"),
        (401, body(error={"message": "bad key"}), APIStatusError, "http_401"),
    ],
)  # fmt: skip
def test_by_status(status: int, raw: bytes, cls: type[APIStatusError], code: str) -> None:
    error = classify_response(status, raw)
    assert type(error) is cls
    assert error.code == code
    assert error.status_code == status


@pytest.mark.parametrize(
    "status", [400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504, 529]
)
def test_retryable_statuses_are_exactly_the_specs(status: int) -> None:
    error = APIStatusError("x", status_code=status)
    assert error.is_retryable == (status in {408, 409, 429, 500, 502, 503, 504, 529})
    assert RETRYABLE_STATUSES == {408, 409, 429, 500, 502, 503, 504, 529}


def test_retryable_classes() -> None:
    assert APIConnectionError("x").is_retryable
    assert APITimeoutError("x").is_retryable
    assert StreamIdleTimeout("x").is_retryable
    assert APIEmptyResponseError("x").is_retryable
    assert APIProviderRateLimitError("x", status_code=429).is_retryable
    assert not APIProviderQuotaExhaustedError("x", status_code=429).is_retryable
    assert not APIContextOverflowError("x", status_code=400).is_retryable
    assert not APIRequestTooLargeError("x", status_code=413).is_retryable
    assert not ChatProviderError("x").is_retryable
    assert not StreamProtocolError("x").is_retryable


def test_hints() -> None:
    url = "https://api.example.test/v1/chat/completions"
    not_found = str(classify_response(404, b"", url=url))
    assert "Check the base URL and endpoint format" in not_found
    assert url in not_found
    assert "Check the API key" in str(classify_response(401, b"{}"))
    assert "rate limited" in str(classify_response(429, b"{}"))


@pytest.mark.parametrize(
    ("code", "message", "cls", "kun_code", "status"),
    [
        ("overloaded_error", "Overloaded", APIStatusError, "overloaded", 529),
        ("rate_limit_error", "slow down", APIProviderRateLimitError, "rate_limited", 429),
        ("context_length_exceeded", "long", APIContextOverflowError, "context_overflow", 400),
        (
            "invalid_request_error",
            "prompt is too long",
            APIContextOverflowError,
            "context_overflow",
            400,
        ),
        ("insufficient_quota", "no money", APIProviderQuotaExhaustedError, "quota_exhausted", 429),
        ("api_error", "Internal server error", APIStatusError, "http_500", 500),
        ("http_429", "slow", APIProviderRateLimitError, "rate_limited", 429),
        ("http_503", "busy", APIStatusError, "http_503", 503),
        ("request_too_large", "big", APIRequestTooLargeError, "request_too_large", 413),
    ],
)
def test_stream_errors_classify_like_bodies(
    code: str, message: str, cls: type[APIStatusError], kun_code: str, status: int
) -> None:
    error = classify_stream_error(code, message)
    assert type(error) is cls
    assert isinstance(error, APIStatusError)
    assert (error.code, error.status_code) == (kun_code, status)
    again = error_from_chunk(error.to_chunk())
    assert type(again) is cls
    assert isinstance(again, APIStatusError)
    assert (again.code, again.status_code, again.is_retryable) == (
        kun_code,
        status,
        error.is_retryable,
    )


def test_unknown_and_kun_codes_pass_through() -> None:
    assert classify_stream_error("stream_truncated", "cut").code == "stream_truncated"
    assert classify_stream_error("empty_tool_calls", "none").code == "empty_tool_calls"
    odd = classify_stream_error("weird_thing", "hm")
    assert type(odd) is ChatProviderError
    assert odd.code == "weird_thing"
    assert "weird_thing" in str(odd)


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        ("connection_error", APIConnectionError),
        ("timeout", APITimeoutError),
        ("stream_idle_timeout", StreamIdleTimeout),
        ("empty_response", APIEmptyResponseError),
        ("stream_protocol_error", StreamProtocolError),
        ("quota_exhausted", APIProviderQuotaExhaustedError),
        ("context_overflow", APIContextOverflowError),
        ("stream_truncated", ChatProviderError),
    ],
)
def test_error_from_chunk(code: str, cls: type[ChatProviderError]) -> None:
    error = error_from_chunk(ErrorChunk(message="m", code=code))
    assert type(error) is cls
    assert error.code == code
    assert str(error) == "m"


def test_error_fields() -> None:
    assert error_fields(b"not json") == ("", ())
    assert error_fields(body(detail="Not allowed")) == ("Not allowed", ())
    message, codes = error_fields(
        body(error={"message": "m", "code": "C1", "type": "t1"}, type="error")
    )
    assert message == "m"
    assert codes == ("c1", "t1")


def test_rw12_deepseek_missing_reasoning_content_is_a_final_400_quoting_the_provider() -> None:
    text = "The `reasoning_content` in the thinking mode must be passed back to the API."
    error = classify_response(
        400,
        body(error={"message": text, "type": "invalid_request_error", "code": "invalid_request"}),
        url="https://api.deepseek.com/chat/completions",
    )
    assert type(error) is APIStatusError
    assert error.status_code == 400 and not error.is_retryable
    assert "reasoning_content" in str(error)
