"""Gemini ``streamGenerateContent?alt=sse`` streams (AI Studio and Vertex AI).

Every event's ``data`` is a whole ``GenerateContentResponse``; there is no
end marker: the candidate's ``finishReason`` is the terminal evidence and
the connection closing after it ends the response (a stream that closes
without one is truncated). Only the first candidate is read.

* Parts of ``candidates[0].content``: ``text`` -> text, ``text`` with
  ``thought: true`` -> reasoning, ``functionCall`` -> a call, arriving
  whole (``args`` is the object). Gemini gives no call id (newer API
  versions may: ``functionCall.id`` is kept when present); calls are keyed
  by their order in the response and settled at the end, so the runtime
  names them (:func:`kun.runtime.answer.thread_call_id`: the call item's
  id, recorded in the log, hence the same on replay).
* ``thoughtSignature`` rides on the chunk of the part it came with
  (``thought_signature`` of the text, reasoning or settled call chunk). A
  signature on a part with nothing else in it (Gemini sends one on an
  empty text part at the end of a stream) belongs to the part before it in
  the response, else to the next one; a text or reasoning part already sent
  gets it on an extra empty-text chunk.
* ``finishReason``: ``STOP`` -> ``stop`` (``tool_calls`` when calls were
  made: Gemini says STOP after calls), ``MAX_TOKENS`` -> ``length``; the
  safety family (``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
  ``PROHIBITED_CONTENT``, ``SPII``, image variants, ``MODEL_ARMOR``) ->
  ``content_filter``, as the other formats report withheld output; a broken
  answer (``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``,
  ``TOO_MANY_TOOL_CALLS``, ``MALFORMED_RESPONSE``,
  ``MISSING_THOUGHT_SIGNATURE``) -> an ``error`` chunk whose code is the
  reason in lower case; any other reason passes through in lower case.
  ``promptFeedback.blockReason`` (the prompt itself was blocked, no
  candidate) -> ``content_filter``.
* ``usageMetadata``: the last report wins (every event repeats it);
  normalized by :mod:`kun.model.usage`. ``responseId`` and
  ``modelVersion`` are the usage chunk's request id and model.
* ``{"error": {"code", "message", "status"}}`` -> an ``error`` chunk whose
  code is the status in lower case (``resource_exhausted``,
  ``unavailable``...), classified like the same error over HTTP.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kun.contracts.model import (
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
)
from kun.model.sse import DONE, SSEEvent
from kun.model.wire.base import StreamDecoder

__all__ = ["BROKEN", "FILTERED", "GeminiDecoder"]


class _FunctionCall(msgspec.Struct, gc=False):
    name: Any = None
    args: Any = None
    id: Any = None


class _Part(msgspec.Struct, gc=False, rename="camel"):
    text: Any = None
    thought: Any = None
    thought_signature: Any = None
    function_call: _FunctionCall | None = None


class _Content(msgspec.Struct, gc=False):
    parts: list[_Part] | None = None


class _Candidate(msgspec.Struct, gc=False, rename="camel"):
    content: _Content | None = None
    finish_reason: Any = None
    finish_message: Any = None


class _Response(msgspec.Struct, gc=False, rename="camel"):
    candidates: list[_Candidate] | None = None
    usage_metadata: Any = None
    prompt_feedback: Any = None
    response_id: Any = None
    model_version: Any = None
    error: Any = None


_decode = msgspec.json.Decoder(_Response).decode
_DONE = DONE.encode()

FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)
"""Finish reasons meaning the provider withheld the output: ``content_filter``."""

BROKEN = frozenset(
    {
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MALFORMED_RESPONSE",
        "MISSING_THOUGHT_SIGNATURE",
    }
)
"""Finish reasons meaning the answer cannot be used: an ``error`` chunk."""

_STOP = {"STOP": "stop", "MAX_TOKENS": "length"}


class GeminiDecoder(StreamDecoder):
    """Decodes one Gemini stream (see the module docstring)."""

    format = "gemini"

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0
        self._last: tuple[str, int] | None = None
        """The last part with content: ``("text"|"thought"|"call", call ordinal)``."""
        self._pending: str | None = None
        self._signatures: dict[int, str] = {}
        self._broken: tuple[str, str] | None = None

    def feed(self, event: SSEEvent) -> list[ModelStreamChunk]:
        if self.ended or event.raw == _DONE:
            return []
        try:
            response = _decode(event.raw)
        except msgspec.DecodeError:
            retried = self._retry(_decode, event)
            if retried is None:
                return []
            response = retried
        return self._apply(response)

    def materialize(self, body: bytes) -> list[ModelStreamChunk]:
        """The one response, then the end its finish reason implies (a
        body read whole is complete: no finish reason reads as ``stop``)."""
        try:
            response = _decode(body)
        except msgspec.DecodeError as exc:
            return self._invalid_body(exc)
        out = self._apply(response)
        if self.ended:
            return out
        if self._broken is not None:
            return out + self._fail(*self._broken)
        if self._stop_reason is None:
            self._stop_reason = "stop"
        return out + self._end()

    def finish(self) -> list[ModelStreamChunk]:
        if not self.ended and self._broken is not None:
            return self._fail(*self._broken)
        return super().finish()

    def _apply(self, response: _Response) -> list[ModelStreamChunk]:
        if response.error is not None:
            return self._fail(*_describe(response.error))
        self._remember(response.response_id, response.model_version)
        if isinstance(response.usage_metadata, dict):
            self._usage = response.usage_metadata
        feedback = response.prompt_feedback
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self._stop_reason = "content_filter"
        if not response.candidates:
            return []
        candidate = response.candidates[0]
        out: list[ModelStreamChunk] = []
        content = candidate.content
        for part in (content.parts if content is not None else None) or ():
            out += self._part(part)
        reason = candidate.finish_reason
        if isinstance(reason, str) and reason:
            self._finish_reason(reason, candidate.finish_message)
        return out

    def _finish_reason(self, reason: str, message: object) -> None:
        if reason in BROKEN:
            detail = message if isinstance(message, str) and message else reason
            self._broken = (f"Gemini ended the answer with {reason}: {detail}", reason.lower())
            self._stop_reason = None
        elif reason in FILTERED:
            self._stop_reason = "content_filter"
        else:
            self._stop_reason = _STOP.get(reason, reason.lower())

    def _part(self, part: _Part) -> list[ModelStreamChunk]:
        signature = part.thought_signature
        sig = signature if isinstance(signature, str) and signature else None
        call = part.function_call
        if call is not None:
            return self._call(call, sig)
        text = part.text
        if not isinstance(text, str) or not text:
            return self._orphan(sig) if sig is not None else []
        kind = "thought" if part.thought is True else "text"
        if sig is None and self._pending is not None:
            sig, self._pending = self._pending, None
        self._last = (kind, -1)
        if kind == "thought":
            return [ReasoningDeltaChunk(text=text, thought_signature=sig)]
        return [TextDeltaChunk(text=text, thought_signature=sig)]

    def _call(self, call: _FunctionCall, sig: str | None) -> list[ModelStreamChunk]:
        key = self._calls
        self._calls += 1
        args = call.args
        arguments = msgspec.json.encode(args).decode() if isinstance(args, dict) else None
        part = self.table.delta(call_id=call.id, index=key, name=call.name, arguments=arguments)
        if part is None:
            return []
        if sig is None and self._pending is not None:
            sig, self._pending = self._pending, None
        if sig is not None:
            self._signatures[part.index] = sig
        self._last = ("call", part.index)
        return [part]

    def _orphan(self, sig: str) -> list[ModelStreamChunk]:
        """A signature on an empty part: the previous part's, else the next's."""
        last = self._last
        if last is None:
            self._pending = sig
            return []
        kind, ordinal = last
        if kind == "call":
            self._signatures.setdefault(ordinal, sig)
            return []
        if kind == "thought":
            return [ReasoningDeltaChunk(text="", thought_signature=sig)]
        return [TextDeltaChunk(text="", thought_signature=sig)]

    def _end(self) -> list[ModelStreamChunk]:
        """As the base, with each settled call carrying its part's signature."""
        out = super()._end()
        if not self._signatures:
            return out
        return [
            msgspec.structs.replace(chunk, thought_signature=self._signatures.get(chunk.index))
            if isinstance(chunk, ToolCallCompleteChunk)
            else chunk
            for chunk in out
        ]


def _describe(error: object) -> tuple[str, str]:
    """Message and code of a Google error object: the ``status`` in lower
    case, else ``http_<code>``."""
    if not isinstance(error, dict):
        return "provider error", "provider_error"
    message = error.get("message")
    text = message if isinstance(message, str) and message else "provider error"
    status = error.get("status")
    if isinstance(status, str) and status:
        return text, status.lower()
    code = error.get("code")
    if isinstance(code, int) and not isinstance(code, bool):
        return text, f"http_{code}"
    return text, "provider_error"
