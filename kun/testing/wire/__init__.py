"""kun chunks rendered back into a provider's wire bytes: the decoders'
inverse (:mod:`kun.model.wire`), one module per format, for the fake
provider, fixtures and benchmarks.

:func:`render_stream` gives the SSE body a provider would send for a chunk
sequence, in that provider's framing and event vocabulary;
:func:`render_body` the non-streaming JSON body; :func:`render_error` an
HTTP error body.

Round trip: for chunks in the order a decoder emits them (deltas as they
stream, each ``tool_call_complete`` where the format settles it, usage just
before the terminal chunk), decoding the rendered stream gives the chunks
back exactly. Other orders render faithfully and decode in canonical
order. Shorthands: a ``tool_call_complete`` with no delta before it
streams as one delta carrying the whole call; a call id starting with
``__kun_stream_tool_call_index_`` is sent without an id (chat completions),
so the decoder synthesizes it again; a sequence with no terminal chunk
renders a stream that just stops (no finish reason, no end marker), as a
truncated stream would. The response id and model are the usage chunk's.

What a format cannot carry raises ``ValueError``: a reasoning signature
outside Messages (Gemini's ``thought_signature`` is carried by Gemini
only, and left out elsewhere), a tool name streamed in pieces outside chat
completions.
Usage fields a format lacks (reasoning tokens on Messages) are dropped.

Knobs: ``finish_reason=False`` leaves the stop reason out (chat: no finish
chunk; Messages: ``stop_reason: null``; Responses: no status);
``done=False`` leaves the end marker out (``[DONE]``, ``message_stop``,
``response.completed``); ``crlf`` ends lines with CRLF;
``keepalive_every=n`` puts a ``: keep-alive`` comment before every n-th
event. ``dialect="kimi"`` renders chat completions as Moonshot sends them
(:mod:`.kimi`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from kun.contracts.model import ModelStreamChunk, WireFormat
from kun.testing.wire.base import Frame, Renderer, encode, frame
from kun.testing.wire.chat_completions import ChatCompletionsRenderer, chat_completions_body
from kun.testing.wire.gemini import GeminiRenderer, gemini_body, gemini_error
from kun.testing.wire.kimi import KimiRenderer, kimi_body
from kun.testing.wire.messages import MessagesRenderer, messages_body
from kun.testing.wire.responses import ResponsesRenderer, responses_body

__all__ = [
    "Dialect",
    "Frame",
    "frame",
    "render_body",
    "render_error",
    "render_events",
    "render_stream",
]

Dialect = Literal["kimi"]
"""A provider's dialect of a format (only chat completions has one)."""

_RENDERERS: dict[str, type[Renderer]] = {
    "chat_completions": ChatCompletionsRenderer,
    "responses": ResponsesRenderer,
    "messages": MessagesRenderer,
    "gemini": GeminiRenderer,
}
_BODIES: dict[str, Callable[[Sequence[ModelStreamChunk]], bytes]] = {
    "chat_completions": chat_completions_body,
    "responses": responses_body,
    "messages": messages_body,
    "gemini": gemini_body,
}


def render_stream(
    format: WireFormat,
    chunks: Sequence[ModelStreamChunk],
    *,
    crlf: bool = False,
    keepalive_every: int = 0,
    finish_reason: bool = True,
    done: bool = True,
    dialect: Dialect | None = None,
) -> bytes:
    """The SSE body a ``format`` provider streams for ``chunks``."""
    frames = render_events(format, chunks, finish_reason=finish_reason, done=done, dialect=dialect)
    return frame(frames, crlf=crlf, keepalive_every=keepalive_every)


def render_events(
    format: WireFormat,
    chunks: Sequence[ModelStreamChunk],
    *,
    finish_reason: bool = True,
    done: bool = True,
    dialect: Dialect | None = None,
) -> list[Frame]:
    """The events of :func:`render_stream`, before framing."""
    kimi = dialect == "kimi" and format == "chat_completions"
    renderer = KimiRenderer if kimi else _RENDERERS[format]
    return renderer(chunks, finish_reason, done).run(chunks)


def render_body(
    format: WireFormat, chunks: Sequence[ModelStreamChunk], dialect: Dialect | None = None
) -> bytes:
    """The non-streaming JSON body a ``format`` provider answers for
    ``chunks`` (text, reasoning and calls folded whole)."""
    if dialect == "kimi" and format == "chat_completions":
        return kimi_body(chunks)
    return _BODIES[format](chunks)


def render_error(format: WireFormat, message: str, code: str, status: int | None = None) -> bytes:
    """An HTTP error body in ``format``'s shape; ``code`` is the error type
    (``rate_limit_error``, ``insufficient_quota``, ...; Gemini: a status
    name such as ``UNAVAILABLE``, else the one of ``status``)."""
    if format == "gemini":
        return encode(gemini_error(message, code, status))
    if format == "messages":
        return encode({"type": "error", "error": {"type": code, "message": message}})
    return encode({"error": {"message": message, "type": code, "param": None, "code": code}})
