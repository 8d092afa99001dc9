"""From a provider's error to kun's error hierarchy, with a next step to take.

Two entry points, one table: :func:`classify_response` reads an HTTP error
(status, body, headers); :func:`classify_stream_error` reads an ``error``
chunk a wire decoder produced from an error *inside* a stream (its code is
the provider's ``error.code`` or ``error.type``). Both give the same class
for the same provider error, so the loop can tell a context overflow from an
overload whichever way it arrived.

Order of evidence:

1. **Code fields.** ``error.code``, ``error.type`` and ``error.status``
   (Google), then the same at the top level, looked up in
   :data:`CODE_KINDS` (``insufficient_quota``, ``context_length_exceeded``,
   ``overloaded_error``, ``rate_limit_error``, ``request_too_large``, ...).
2. **Wording**, only when no code decided: :data:`PATTERNS`, a short table
   of phrasings providers use without a code ("prompt is too long",
   "maximum context length ... requested about N tokens", "limit: 0",
   "insufficient balance", ...).
3. **Status.** 413 -> request too large, 429 -> rate limited, anything else
   a plain :class:`APIStatusError`. A stream error's code is given the
   status its provider uses over HTTP (:data:`TYPE_STATUS`).

Google's ``RESOURCE_EXHAUSTED`` covers both a per-minute limit and an
exhausted quota: it is quota exhaustion (never retried) unless the provider
says when to retry (a ``Retry-After`` or a ``retryDelay``) without a
``limit: 0``, and no ``QuotaFailure`` violation names a daily quota (a
``quotaId`` with ``PerDay``: Gemini's free tier says "retry in 30 s" for a
quota that only comes back tomorrow).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Literal

import msgspec

from kun.model.errors import (
    APIContextOverflowError,
    APIProviderQuotaExhaustedError,
    APIProviderRateLimitError,
    APIRequestTooLargeError,
    APIStatusError,
    ChatProviderError,
)
from kun.model.redact import summarize_body

__all__ = [
    "CODE_KINDS",
    "KUN_STREAM_CODES",
    "PATTERNS",
    "TYPE_STATUS",
    "ErrorKind",
    "classify_response",
    "classify_stream_error",
    "error_fields",
]

ErrorKind = Literal["quota", "context_overflow", "too_large", "rate_limited", "overloaded"]

CODE_KINDS: dict[str, ErrorKind] = {
    "insufficient_quota": "quota",
    "insufficient_balance": "quota",
    "billing_hard_limit_reached": "quota",
    "credit_balance_too_low": "quota",
    "resource_exhausted": "quota",
    "context_length_exceeded": "context_overflow",
    "context_window_exceeded": "context_overflow",
    "model_context_window_exceeded": "context_overflow",
    "request_too_large": "too_large",
    "payload_too_large": "too_large",
    "request_entity_too_large": "too_large",
    "rate_limit_error": "rate_limited",
    "rate_limit_exceeded": "rate_limited",
    "rate_limited": "rate_limited",
    "too_many_requests": "rate_limited",
    "overloaded_error": "overloaded",
    "overloaded": "overloaded",
    "engine_overloaded_error": "overloaded",
    "server_overloaded": "overloaded",
}
"""Provider codes and types (lower-cased) that decide the class alone."""

PATTERNS: tuple[tuple[re.Pattern[str], ErrorKind], ...] = (
    (
        re.compile(
            r"insufficient[_ ]quota|exceeded your current quota|insufficient (?:account )?balance"
            r"|credit balance is too low|billing hard limit|limit: 0\b|余额不足",
            re.IGNORECASE,
        ),
        "quota",
    ),
    (
        re.compile(
            r"prompt is too long|maximum context length|context[_ ]length[_ ]exceeded"
            r"|exceeds? the (?:model's )?context window|context window (?:is )?exceeded"
            r"|input is too long|reduce the length of the messages|exceeded model token limit"
            r"|exceeds the maximum number of tokens|range of input length",
            re.IGNORECASE,
        ),
        "context_overflow",
    ),
)
"""Wordings that classify an error carrying no decisive code."""

TYPE_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "invalid_argument": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "permission_denied": 403,
    "not_found_error": 404,
    "not_found": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "api_error": 500,
    "server_error": 500,
    "internal_error": 500,
    "internal": 500,
    "unavailable": 503,
    "deadline_exceeded": 504,
    "overloaded_error": 529,
}
"""The HTTP status a provider uses for an error type it can also report
inside a stream."""

KUN_STREAM_CODES = frozenset({"stream_truncated", "empty_tool_calls", "invalid_response"})
"""Codes the decoders give kun's own findings; they pass through unchanged."""

_STATUS_KINDS: dict[int, ErrorKind] = {413: "too_large", 429: "rate_limited", 529: "overloaded"}
_KIND_STATUS: dict[ErrorKind, int] = {
    "quota": 429,
    "context_overflow": 400,
    "too_large": 413,
    "rate_limited": 429,
    "overloaded": 529,
}
_HTTP_CODE = re.compile(r"http_(\d{3})")
_RETRY_DELAY = re.compile(r'"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"')


def classify_response(
    status: int,
    body: bytes,
    *,
    retry_after: float | None = None,
    url: str = "",
) -> APIStatusError:
    """The error an HTTP error response stands for. ``retry_after`` is the
    already-parsed ``Retry-After`` (seconds); ``url`` (redacted) is quoted in
    hints. The message leads with what happened and ends with what to do."""
    message, codes = error_fields(body)
    text = body.decode("utf-8", "replace")
    if retry_after is None and (delay := _RETRY_DELAY.search(text)) is not None:
        retry_after = float(delay.group(1))
    says_when = retry_after is not None and not _daily_quota(body)
    kind = _kind(codes, message or text, says_when) or _STATUS_KINDS.get(status)
    detail = message or summarize_body(text) or "(empty body)"
    return _build(kind, status, f"HTTP {status}", detail, retry_after=retry_after, url=url)


def classify_stream_error(code: str, message: str) -> ChatProviderError:
    """The error an ``error`` chunk from a wire decoder stands for.

    kun's own codes (:data:`KUN_STREAM_CODES`) are kept as they are; a
    provider code unknown to every table is kept too, as a plain
    :class:`ChatProviderError`."""
    if code in KUN_STREAM_CODES:
        return ChatProviderError(message, code=code)
    lowered = code.lower()
    numeric = _HTTP_CODE.fullmatch(lowered)
    status = int(numeric.group(1)) if numeric else TYPE_STATUS.get(lowered)
    kind = _kind((lowered,), message, False)
    if kind is None and status is not None:
        kind = _STATUS_KINDS.get(status)
    if kind is None and status is None:
        return ChatProviderError(f"the provider reported {code}: {message}", code=code)
    if kind is not None:
        status = _KIND_STATUS[kind]
    return _build(kind, status or 400, f"stream error {code}", message, retry_after=None, url="")


def error_fields(body: bytes) -> tuple[str, tuple[str, ...]]:
    """The message and the classifying codes of an error body, in order of
    specificity: ``error.code``, ``error.type``, ``error.status``, then the
    top-level ones. A list body (Google) is read through its first element."""
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return "", ()
    if isinstance(data, list) and data:
        data = data[0]
    if not isinstance(data, dict):
        return "", ()
    inner = data.get("error")
    scopes = [inner, data] if isinstance(inner, dict) else [data]
    codes = tuple(_codes(scopes))
    message = ""
    for scope in scopes:
        for key in ("message", "detail", "error_msg", "msg"):
            value = scope.get(key)
            if isinstance(value, str) and value:
                message = value
                break
        if message:
            break
    if not message and isinstance(inner, str):
        message = inner
    return message, codes


def _daily_quota(body: bytes) -> bool:
    """Whether a Google error's ``QuotaFailure`` details name a daily quota."""
    if b"PerDay" not in body:
        return False
    try:
        data: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return False
    if isinstance(data, list) and data:
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        violations = detail.get("violations") if isinstance(detail, dict) else None
        for violation in violations if isinstance(violations, list) else ():
            quota = violation.get("quotaId") if isinstance(violation, dict) else None
            if isinstance(quota, str) and "PerDay" in quota:
                return True
    return False


def _codes(scopes: list[dict[str, Any]]) -> Iterator[str]:
    for scope in scopes:
        for key in ("code", "type", "status"):
            value = scope.get(key)
            if isinstance(value, str) and value and value != "error":
                yield value.lower()


def _kind(codes: tuple[str, ...], message: str, says_when: bool) -> ErrorKind | None:
    for code in codes:
        kind = CODE_KINDS.get(code)
        if kind is None:
            continue
        if code == "resource_exhausted" and says_when and "limit: 0" not in message:
            return "rate_limited"
        return kind
    for pattern, kind in PATTERNS:
        if pattern.search(message):
            return kind
    return None


def _build(
    kind: ErrorKind | None,
    status: int,
    origin: str,
    detail: str,
    *,
    retry_after: float | None,
    url: str,
) -> APIStatusError:
    if kind == "quota":
        return APIProviderQuotaExhaustedError(
            f"quota exhausted ({origin}): {detail}. kun will not retry: waiting does not "
            "restore a quota; top up the account, raise the limit or switch model",
            status_code=status,
            body=detail,
        )
    if kind == "context_overflow":
        return APIContextOverflowError(
            f"context overflow ({origin}): {detail}", status_code=status, body=detail
        )
    if kind == "too_large":
        return APIRequestTooLargeError(
            f"request too large ({origin}): {detail}", status_code=status, body=detail
        )
    if kind == "rate_limited":
        return APIProviderRateLimitError(
            f"rate limited ({origin}): {detail}",
            status_code=status,
            retry_after=retry_after,
            body=detail,
        )
    if kind == "overloaded":
        return APIStatusError(
            f"provider overloaded ({origin}): {detail}",
            status_code=status,
            code="overloaded",
            retry_after=retry_after,
            body=detail,
        )
    return APIStatusError(
        f"{origin}{_where(url)}: {detail}{_hint(status)}",
        status_code=status,
        retry_after=retry_after,
        body=detail,
    )


def _where(url: str) -> str:
    return f" from {url}" if url else ""


def _hint(status: int) -> str:
    if status == 404:
        return ". Check the base URL and endpoint format"
    if status in (401, 403):
        return ". Check the API key and that it may use this model"
    return ""
