"""Sans-IO decoders for the wire formats, one module each.

:func:`new_decoder` gives a fresh stream decoder for a format;
:func:`materialize` turns a non-streaming JSON body (or a server that
answered ``application/json`` to a streaming request) into the same chunks
the stream would have produced.
"""

from __future__ import annotations

from kun.contracts.model import ModelStreamChunk, WireFormat
from kun.model.wire.base import StreamDecoder
from kun.model.wire.chat_completions import ChatCompletionsDecoder
from kun.model.wire.gemini import GeminiDecoder
from kun.model.wire.messages import MessagesDecoder
from kun.model.wire.responses import ResponsesDecoder

__all__ = [
    "ChatCompletionsDecoder",
    "GeminiDecoder",
    "MessagesDecoder",
    "ResponsesDecoder",
    "StreamDecoder",
    "materialize",
    "new_decoder",
]

_DECODERS: dict[str, type[StreamDecoder]] = {
    "chat_completions": ChatCompletionsDecoder,
    "responses": ResponsesDecoder,
    "messages": MessagesDecoder,
    "gemini": GeminiDecoder,
}


def new_decoder(format: WireFormat) -> StreamDecoder:
    """A fresh decoder for one stream in ``format``."""
    return _DECODERS[format]()


def materialize(format: WireFormat, body: bytes) -> list[ModelStreamChunk]:
    """The chunks of a complete, non-streaming response body in ``format``."""
    return new_decoder(format).materialize(body)
