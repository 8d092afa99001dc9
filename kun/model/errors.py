"""Errors of the model layer.

::

    UserMistake (kun.errors)
    ├── EndpointConfigError         the configured endpoint cannot work: a custom
    │                               endpoint whose path does not name its wire
    │                               format, a base URL that is not http(s).
    │                               Raised when the client is built, before
    │                               anything is sent.
    └── AttachmentTooLarge          an attachment a model cannot take as an
                                    image is over the size limit of the
                                    base64 text fallback. Raised while the
                                    request is built, before anything is sent.

    RuntimeFailure (kun.errors)
    └── ChatProviderError           a model provider failed us     provider_error
        ├── ClientConfigError       the request cannot leave kun:  client_config_error never
        │                           a header value (the API key)
        │                           httpx refuses, an invalid URL
        ├── StreamProtocolError     the stream broke the wire      stream_protocol_error
        │                           protocol beyond any recovery
        │                           rule: a tool-call id that is
        │                           not a string, holds control
        │                           characters or is over 256
        │                           characters; a late id colliding
        │                           with another pending call; a
        │                           delta for a settled call
        ├── APIConnectionError      no answer: connect/read/proxy  connection_error   retryable
        │   │                       failure, a broken connection
        │   └── ConnectionRefusedLocally  a loopback or private    connection_refused never
        │                           address refused: no server
        ├── APITimeoutError         the transport timed out        timeout            retryable
        │   └── StreamIdleTimeout   nothing but keep-alives for    stream_idle_timeout retryable
        │                           the idle timeout
        ├── APIStatusError          the provider said no           http_<status>   retryable for
        │   │                                                      408 409 429 500 502 503 504 529
        │   ├── APIProviderRateLimitError       429, rate limited  rate_limited       retryable
        │   ├── APIProviderQuotaExhaustedError  out of quota or    quota_exhausted    never
        │   │                                   balance
        │   ├── APIContextOverflowError         prompt larger than context_overflow   no: compact
        │   │                                   the context window
        │   └── APIRequestTooLargeError         body too large     request_too_large  no: strip
        │                                                                             media
        └── APIEmptyResponseError   a 200 with nothing in it       empty_response     retryable

The client never raises these at its caller: :class:`~kun.model.port.ModelClient`
streams end with an ``error`` chunk carrying ``code``. :func:`error_from_chunk`
turns such a chunk back into the typed error, so the loop classifies by type
(context overflow -> compaction, request too large -> resend without media,
retryable -> try again) and never by message text.

``is_retryable`` says whether sending the same request again can succeed. For
:class:`APIStatusError` it follows the status; a provider that reports an
error *inside* a 200 stream (Anthropic's ``overloaded_error``) gets the status
it uses for that error over HTTP (529), so both paths classify alike.

A frame that is not JSON is not an error: the decoders skip and count it.
"""

from __future__ import annotations

from typing import ClassVar

from kun.contracts.model import ErrorChunk
from kun.errors import RuntimeFailure, UserMistake

__all__ = [
    "RETRYABLE_STATUSES",
    "APIConnectionError",
    "APIContextOverflowError",
    "APIEmptyResponseError",
    "APIProviderQuotaExhaustedError",
    "APIProviderRateLimitError",
    "APIRequestTooLargeError",
    "APIStatusError",
    "APITimeoutError",
    "AttachmentTooLarge",
    "ChatProviderError",
    "ClientConfigError",
    "ConnectionRefusedLocally",
    "EndpointConfigError",
    "StreamIdleTimeout",
    "StreamProtocolError",
    "error_from_chunk",
]

RETRYABLE_STATUSES: frozenset[int] = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""HTTP statuses after which the same request may succeed."""


class EndpointConfigError(UserMistake):
    """The endpoint configuration cannot produce a working URL; the message
    quotes what is accepted."""


class AttachmentTooLarge(UserMistake):
    """An attachment is too large to send as text; the message names the file,
    its size and the limit, and says how to get past it."""


class ChatProviderError(RuntimeFailure):
    """A model provider failed to give a usable answer.

    ``code`` is the stable classifier carried by the ``error`` chunk; a class
    sets the default, an instance may be more specific (a provider's own code
    for an error kun has no class for).
    """

    code: str = "provider_error"
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self)

    @property
    def is_retryable(self) -> bool:
        """Whether the same request, sent again, may succeed."""
        return self.retryable

    def to_chunk(self) -> ErrorChunk:
        """The ``error`` chunk that ends a stream failing this way."""
        return ErrorChunk(message=str(self), code=self.code)


class ClientConfigError(ChatProviderError):
    """The request cannot be sent as configured: a header value (the API key,
    a header from ``kun.toml``) or the URL is one the HTTP library refuses
    before anything leaves. Never retried: the same request fails the same
    way. The message names the header, never its value."""

    code = "client_config_error"


class StreamProtocolError(ChatProviderError):
    """Raised by the stream decoders when a stream is malformed beyond repair;
    guessing would attach arguments to the wrong tool call."""

    code = "stream_protocol_error"


class APIConnectionError(ChatProviderError):
    """The provider could not be reached, or the connection broke."""

    code = "connection_error"
    retryable = True


class ConnectionRefusedLocally(APIConnectionError):
    """A local address (loopback, private, link-local) refused the
    connection: nothing listens there, and waiting will not start it."""

    code = "connection_refused"
    retryable = False


class APITimeoutError(ChatProviderError):
    """A transport timeout (connect, write, pool)."""

    code = "timeout"
    retryable = True


class StreamIdleTimeout(APITimeoutError):
    """The provider sent nothing that counts as progress for the idle timeout;
    keep-alive comments and ``ping`` events do not count."""

    code = "stream_idle_timeout"


class APIStatusError(ChatProviderError):
    """The provider answered with an error status (or reported an error event
    whose HTTP equivalent is ``status_code``). ``retry_after`` is the wait the
    provider asked for, in seconds, when it said; ``body`` is the start of the
    response body (redacted, at most 1000 characters)."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int,
        code: str | None = None,
        retry_after: float | None = None,
        body: str = "",
    ) -> None:
        super().__init__(message, code=code or type(self)._default_code(status_code))
        self.status_code = status_code
        self.retry_after = retry_after
        self.body = body

    @classmethod
    def _default_code(cls, status_code: int) -> str:
        return cls.code if "code" in cls.__dict__ else f"http_{status_code}"

    @property
    def is_retryable(self) -> bool:
        return self.status_code in RETRYABLE_STATUSES


class APIProviderRateLimitError(APIStatusError):
    """Rate limited (429): waiting helps."""

    code = "rate_limited"

    @property
    def is_retryable(self) -> bool:
        return True


class APIProviderQuotaExhaustedError(APIStatusError):
    """Out of quota or balance (usually 429, sometimes 402): waiting does not
    help, so it is never retried. A sibling of the rate-limit error, not a
    kind of it."""

    code = "quota_exhausted"

    @property
    def is_retryable(self) -> bool:
        return False


class APIContextOverflowError(APIStatusError):
    """The prompt does not fit the model's context window: compact, do not retry."""

    code = "context_overflow"

    @property
    def is_retryable(self) -> bool:
        return False


class APIRequestTooLargeError(APIStatusError):
    """The request body is too large (413): resend without media, do not retry."""

    code = "request_too_large"

    @property
    def is_retryable(self) -> bool:
        return False


class APIEmptyResponseError(ChatProviderError):
    """The provider answered 200 with an empty body."""

    code = "empty_response"
    retryable = True


_NOMINAL_STATUS: dict[type[APIStatusError], int] = {
    APIProviderRateLimitError: 429,
    APIProviderQuotaExhaustedError: 429,
    APIContextOverflowError: 400,
    APIRequestTooLargeError: 413,
}
_PLAIN: dict[str, type[ChatProviderError]] = {
    cls.code: cls
    for cls in (
        ClientConfigError,
        StreamProtocolError,
        APIConnectionError,
        ConnectionRefusedLocally,
        APITimeoutError,
        StreamIdleTimeout,
        APIEmptyResponseError,
    )
}
_STATUS_CODES: dict[str, tuple[type[APIStatusError], int]] = {
    cls.code: (cls, status) for cls, status in _NOMINAL_STATUS.items()
}
_STATUS_CODES["overloaded"] = (APIStatusError, 529)


def error_from_chunk(chunk: ErrorChunk) -> ChatProviderError:
    """The typed error an ``error`` chunk stands for.

    kun's codes map back to their classes (``http_<n>`` to an
    :class:`APIStatusError` with that status, ``overloaded`` to one with 529);
    any other code (``stream_truncated``, a provider's own) is a plain
    :class:`ChatProviderError` keeping the code.
    """
    code, message = chunk.code, chunk.message
    plain = _PLAIN.get(code)
    if plain is not None:
        return plain(message)
    known = _STATUS_CODES.get(code)
    if known is not None:
        cls, status = known
        return cls(message, status_code=status, code=code)
    if code.startswith("http_") and code[5:].isdecimal():
        return APIStatusError(message, status_code=int(code[5:]))
    return ChatProviderError(message, code=code)
