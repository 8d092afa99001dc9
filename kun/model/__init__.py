"""The model layer: from bytes on the wire to the seven chunks the loop sees.

So far the sans-IO core: the SSE parser (:mod:`kun.model.sse`), the shared
tool-call table (:mod:`kun.model.toolcalls`), argument repair
(:mod:`kun.model.arguments`), usage normalization (:mod:`kun.model.usage`)
and one decoder per wire format (:mod:`kun.model.wire`).
"""

from __future__ import annotations

from kun.model.arguments import RepairedArguments, repair_arguments
from kun.model.classify import classify_response, classify_stream_error
from kun.model.client import HttpModelClient
from kun.model.endpoints import Endpoint, EndpointFormat, infer_wire_format, resolve_endpoint
from kun.model.errors import (
    APIConnectionError,
    APIContextOverflowError,
    APIEmptyResponseError,
    APIProviderQuotaExhaustedError,
    APIProviderRateLimitError,
    APIRequestTooLargeError,
    APIStatusError,
    APITimeoutError,
    ChatProviderError,
    EndpointConfigError,
    StreamIdleTimeout,
    StreamProtocolError,
    error_from_chunk,
)
from kun.model.reading import CallStats
from kun.model.redact import Redactor, redact_url
from kun.model.request_codec import RequestCodec, codec_for
from kun.model.retry import RetryPolicy
from kun.model.sse import DONE, SSEEvent, SSEParser
from kun.model.toolcalls import ToolCallTable
from kun.model.usage import normalize_usage
from kun.model.wire import (
    ChatCompletionsDecoder,
    MessagesDecoder,
    ResponsesDecoder,
    StreamDecoder,
    materialize,
    new_decoder,
)

__all__ = [
    "DONE",
    "APIConnectionError",
    "APIContextOverflowError",
    "APIEmptyResponseError",
    "APIProviderQuotaExhaustedError",
    "APIProviderRateLimitError",
    "APIRequestTooLargeError",
    "APIStatusError",
    "APITimeoutError",
    "CallStats",
    "ChatCompletionsDecoder",
    "ChatProviderError",
    "Endpoint",
    "EndpointConfigError",
    "EndpointFormat",
    "HttpModelClient",
    "MessagesDecoder",
    "Redactor",
    "RepairedArguments",
    "RequestCodec",
    "ResponsesDecoder",
    "RetryPolicy",
    "SSEEvent",
    "SSEParser",
    "StreamDecoder",
    "StreamIdleTimeout",
    "StreamProtocolError",
    "ToolCallTable",
    "classify_response",
    "classify_stream_error",
    "codec_for",
    "error_from_chunk",
    "infer_wire_format",
    "materialize",
    "new_decoder",
    "normalize_usage",
    "redact_url",
    "repair_arguments",
    "resolve_endpoint",
]
