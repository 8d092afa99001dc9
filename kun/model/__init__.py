"""The model layer: from bytes on the wire to the seven chunks the loop sees.

So far the sans-IO core: the SSE parser (:mod:`kun.model.sse`), the shared
tool-call table (:mod:`kun.model.toolcalls`), argument repair
(:mod:`kun.model.arguments`), usage normalization (:mod:`kun.model.usage`)
and one decoder per wire format (:mod:`kun.model.wire`).
"""

from __future__ import annotations

from kun.model.arguments import RepairedArguments, repair_arguments
from kun.model.errors import ChatProviderError, StreamProtocolError
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
    "ChatCompletionsDecoder",
    "ChatProviderError",
    "MessagesDecoder",
    "RepairedArguments",
    "ResponsesDecoder",
    "SSEEvent",
    "SSEParser",
    "StreamDecoder",
    "StreamProtocolError",
    "ToolCallTable",
    "materialize",
    "new_decoder",
    "normalize_usage",
    "repair_arguments",
]
