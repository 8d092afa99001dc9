"""What every stream decoder shares: the end-of-stream rules.

A decoder is sans-IO: ``feed(event)`` takes one parsed SSE event and returns
the chunks it produced; ``finish()`` is called once when the connection
closes and returns whatever the end of the stream implies. A response ends
with exactly one ``completed`` or ``error`` chunk, and nothing is produced
after it.

End of stream:

* Terminal evidence (a finish reason, ``[DONE]``, ``response.completed``,
  ``message_stop``) settles every pending named call. When calls were
  settled and the provider said ``stop`` or ``length`` (or nothing), the
  stop reason becomes ``tool_calls``: providers mislabel it, and a call
  silently dropped is worse than a call with bad arguments.
* ``tool_calls`` with no call to run is an ``error`` chunk
  (``empty_tool_calls``), never a ``completed`` one: the loop would ask again
  and again.
* A connection closed with no terminal evidence is an ``error`` chunk
  (``stream_truncated``); pending calls are not settled, since nothing says
  their arguments are whole.

Usage, when the provider reported any, comes just before the final chunk.
Counters: ``skipped`` (frames that were not JSON or not of the expected
shape: skipped, never fatal) and ``keepalives`` (``ping`` events: alive, but
no progress).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar

import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelStreamChunk,
    UsageChunk,
    WireFormat,
)
from kun.model.sse import SSEEvent
from kun.model.toolcalls import ToolCallTable
from kun.model.usage import normalize_usage

__all__ = ["StreamDecoder", "describe_error"]

_RELABELLED = frozenset({"stop", "length"})
_T = TypeVar("_T")


class StreamDecoder(ABC):
    """Base of the three wire decoders (see the module docstring). One
    instance decodes one response."""

    format: ClassVar[WireFormat]

    def __init__(self) -> None:
        self.table = ToolCallTable()
        self.skipped = 0
        self.keepalives = 0
        self.ended = False
        self._usage: dict[str, Any] | None = None
        self._request_id: str | None = None
        self._model: str | None = None
        self._stop_reason: str | None = None

    @abstractmethod
    def feed(self, event: SSEEvent) -> list[ModelStreamChunk]:
        """Decode one SSE event into chunks."""

    @abstractmethod
    def materialize(self, body: bytes) -> list[ModelStreamChunk]:
        """Decode a whole non-streaming JSON body into the chunks its stream
        would have produced, ending like a stream does."""

    def feed_all(self, events: Iterable[SSEEvent]) -> list[ModelStreamChunk]:
        """Decode a batch of events (what one read of the socket produced);
        the same chunks as ``feed`` on each, with less overhead per event."""
        out: list[ModelStreamChunk] = []
        feed = self.feed
        for event in events:
            out += feed(event)
        return out

    def finish(self) -> list[ModelStreamChunk]:
        """The connection closed: end the response if it has not ended."""
        if self.ended:
            return []
        if self._stop_reason is not None:
            return self._end()
        return self._fail(
            "the stream ended before the provider said it was complete", "stream_truncated"
        )

    def _retry(self, decode: Callable[[str], _T], event: SSEEvent) -> _T | None:
        """``event.raw`` did not decode. msgspec rejects invalid UTF-8, which
        the SSE rules replace instead, so try the text once; a frame that
        still fails is skipped and counted."""
        try:
            return decode(event.data)
        except msgspec.DecodeError:
            self.skipped += 1
            return None

    def _remember(self, request_id: object, model: object) -> None:
        if self._request_id is None and isinstance(request_id, str) and request_id:
            self._request_id = request_id
        if self._model is None and isinstance(model, str) and model:
            self._model = model

    def _end(self) -> list[ModelStreamChunk]:
        """Terminal evidence arrived: settle, report usage, complete."""
        self.ended = True
        out: list[ModelStreamChunk] = list(self.table.settle_all())
        reason = self._stop_reason
        if self.table.completed and (reason is None or reason in _RELABELLED):
            reason = "tool_calls"
        out.extend(self._usage_chunks())
        if reason == "tool_calls" and not self.table.completed:
            out.append(
                ErrorChunk(
                    message="the provider finished with tool_calls but sent no tool call",
                    code="empty_tool_calls",
                )
            )
        else:
            out.append(CompletedChunk(stop_reason=reason or "stop"))
        return out

    def _invalid_body(self, error: msgspec.DecodeError) -> list[ModelStreamChunk]:
        return self._fail(
            f"the response body is not a {self.format} response: {error}", "invalid_response"
        )

    def _fail(self, message: str, code: str) -> list[ModelStreamChunk]:
        self.ended = True
        out = self._usage_chunks()
        out.append(ErrorChunk(message=message, code=code))
        return out

    def _usage_chunks(self) -> list[ModelStreamChunk]:
        if self._usage is None:
            return []
        return [
            UsageChunk(
                usage=normalize_usage(self._usage),
                request_id=self._request_id,
                model=self._model,
            )
        ]


def describe_error(error: object, default_code: str = "provider_error") -> tuple[str, str]:
    """Message and code of a provider error object (``{"message", "code",
    "type"}`` in any of the usual spellings, or a bare string). The code is
    the most specific classifier given: a string ``code``, else ``type``,
    else a numeric ``code`` as ``http_<n>``."""
    if isinstance(error, str):
        return error or "provider error", default_code
    if not isinstance(error, dict):
        return "provider error", default_code
    message = error.get("message")
    code = error.get("code")
    kind = error.get("type")
    text = message if isinstance(message, str) and message else "provider error"
    if isinstance(code, str) and code:
        return text, code
    if isinstance(kind, str) and kind and kind != "error":
        return text, kind
    if isinstance(code, int) and not isinstance(code, bool):
        return text, f"http_{code}"
    return text, default_code
