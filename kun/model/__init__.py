"""The model layer: from bytes on the wire to the seven chunks the loop sees.

So far the sans-IO core: the SSE parser (:mod:`kun.model.sse`), the shared
tool-call table (:mod:`kun.model.toolcalls`), argument repair
(:mod:`kun.model.arguments`), usage normalization (:mod:`kun.model.usage`)
and one decoder per wire format (:mod:`kun.model.wire`).

The names below are loaded on first use (``from kun.model import
HttpModelClient``), so importing a submodule such as :mod:`kun.model.port`
does not load the HTTP client and httpx with it (``kun replay`` stays fast).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_WHERE = {
    "RepairedArguments": "kun.model.arguments",
    "repair_arguments": "kun.model.arguments",
    "classify_response": "kun.model.classify",
    "classify_stream_error": "kun.model.classify",
    "HttpModelClient": "kun.model.client",
    "Endpoint": "kun.model.endpoints",
    "EndpointFormat": "kun.model.endpoints",
    "infer_wire_format": "kun.model.endpoints",
    "resolve_endpoint": "kun.model.endpoints",
    "APIConnectionError": "kun.model.errors",
    "APIContextOverflowError": "kun.model.errors",
    "APIEmptyResponseError": "kun.model.errors",
    "APIProviderQuotaExhaustedError": "kun.model.errors",
    "APIProviderRateLimitError": "kun.model.errors",
    "APIRequestTooLargeError": "kun.model.errors",
    "APIStatusError": "kun.model.errors",
    "APITimeoutError": "kun.model.errors",
    "ChatProviderError": "kun.model.errors",
    "EndpointConfigError": "kun.model.errors",
    "StreamIdleTimeout": "kun.model.errors",
    "StreamProtocolError": "kun.model.errors",
    "error_from_chunk": "kun.model.errors",
    "CallStats": "kun.model.reading",
    "Redactor": "kun.model.redact",
    "redact_url": "kun.model.redact",
    "RequestCodec": "kun.model.request_codec",
    "codec_for": "kun.model.request_codec",
    "RetryPolicy": "kun.model.retry",
    "DONE": "kun.model.sse",
    "SSEEvent": "kun.model.sse",
    "SSEParser": "kun.model.sse",
    "ToolCallTable": "kun.model.toolcalls",
    "normalize_usage": "kun.model.usage",
    "ChatCompletionsDecoder": "kun.model.wire",
    "MessagesDecoder": "kun.model.wire",
    "ResponsesDecoder": "kun.model.wire",
    "StreamDecoder": "kun.model.wire",
    "materialize": "kun.model.wire",
    "new_decoder": "kun.model.wire",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kun.model' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
