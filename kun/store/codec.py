"""Events to log lines and back: one Encoder, one Decoder, made once.

Decoding has a fast path and a slow one. The fast path is a typed decode of
the ``Event`` union (:func:`decode_block` does a whole block of lines in one
call). Only when it fails, or when an event's ``v`` is older than its kind's
current version, does a line take the slow path (:func:`decode_line`): decode
a tiny envelope to learn the kind (msgspec has no unknown-tag fallback, so
this is how an unknown kind is told apart from a broken line), decode the line
to a mapping, :func:`kun.domain.upcast.upcast` it, and decode the result as an
``Event``. The upcast result is re-encoded rather than ``msgspec.convert``-ed
because ``convert`` cannot build the ``msgspec.Raw`` of a tool call's
arguments from a mapping.

:func:`decode_line` reports a line it cannot turn into an event with a
:class:`LineError`; the reader turns those into ``CorruptLog`` with the file
and line number, which only it knows.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from msgspec.structs import force_setattr

from kun.contracts.events import (
    EVENT_TYPES,
    KINDS,
    Event,
    EventBase,
    ItemCompleted,
    ItemCreated,
    ItemUpdated,
)
from kun.contracts.items import ToolCall
from kun.domain.upcast import CURRENT_VERSION, upcast

__all__ = [
    "ENCODER",
    "LineError",
    "NotJson",
    "UnknownKind",
    "WrongShape",
    "decode_block",
    "decode_line",
    "encode_line",
    "preview",
    "stale_types",
]

ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Event)
_ANY = msgspec.json.Decoder()

_ITEM_EVENTS: frozenset[type[EventBase]] = frozenset({ItemCreated, ItemUpdated, ItemCompleted})
_TAG: dict[type[EventBase], str] = {t: str(t.__struct_config__.tag) for t in EVENT_TYPES}


class _Envelope(msgspec.Struct):
    kind: str
    seq: int = 0
    v: int = 1


_ENVELOPE = msgspec.json.Decoder(_Envelope)


class LineError(Exception):
    """A line that is not an event. Internal to the store: readers translate
    it into ``CorruptLog``/``UnknownEventKind`` or skip it, per their mode."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class NotJson(LineError):
    """Not one JSON value in valid UTF-8: garbage, or a torn write."""


class WrongShape(LineError):
    """Valid JSON, but not a valid event of a known kind."""


class UnknownKind(LineError):
    """A kind this version does not know (or a newer version of a known kind
    that no longer decodes): written by a newer kun."""

    def __init__(self, kind: str, seq: int) -> None:
        self.kind = kind
        self.seq = seq
        super().__init__(f"unknown event kind {kind!r}")


def encode_line(event: Event) -> bytes:
    """The event as one log line, ``\\n`` included."""
    return ENCODER.encode(event) + b"\n"


def stale_types() -> dict[type[EventBase], int]:
    """Event types whose current version is above 1, with that version: an
    event of such a type decoded with a lower ``v`` must be upcast. Empty
    while no kind has changed shape, which keeps the fast path free of
    per-event checks. Read afresh per read, so a patched registry applies."""
    return {t: CURRENT_VERSION[tag] for t, tag in _TAG.items() if CURRENT_VERSION.get(tag, 1) > 1}


def decode_block(
    block: bytes | memoryview, stale: Mapping[type[EventBase], int]
) -> list[Event] | None:
    """Decode newline-separated lines in one call; ``None`` if any line needs
    the slow path (then decode the block line by line to find which).

    Blank lines are JSON whitespace here and are skipped. A decoded
    ``msgspec.Raw`` is a view that keeps its whole input alive, so the
    arguments of tool calls are copied out of the block before anyone sees
    them (in place: the items are brand new): a replay that keeps every tool
    call would otherwise keep the whole log in memory.
    """
    try:
        events = _DECODER.decode_lines(block)
    except msgspec.DecodeError:
        return None
    if stale:
        for event in events:
            version = stale.get(type(event))
            if version is not None and event.v < version:
                return None
    for event in events:
        if type(event) in _ITEM_EVENTS:
            item = event.item  # type: ignore[union-attr]
            if type(item) is ToolCall:
                force_setattr(item, "arguments", item.arguments.copy())
    return events


def decode_line(line: bytes) -> Event:
    """Decode one line (without its newline) into an event, upcasting an old
    version; raise a :class:`LineError` subclass for anything else."""
    try:
        event = _DECODER.decode(line)
    except msgspec.ValidationError:
        return _decode_slow(line)
    except msgspec.DecodeError as exc:
        raise NotJson(str(exc)) from None
    if event.v < CURRENT_VERSION.get(_TAG[type(event)], 1):
        return _decode_slow(line)
    return event


def _decode_slow(line: bytes) -> Event:
    try:
        envelope = _ENVELOPE.decode(line)
    except msgspec.ValidationError as exc:
        raise WrongShape(f"not an event: {exc}") from None
    except msgspec.DecodeError as exc:
        raise NotJson(str(exc)) from None
    if envelope.kind not in KINDS:
        raise UnknownKind(envelope.kind, envelope.seq)
    try:
        raw = _ANY.decode(line)
    except msgspec.DecodeError as exc:
        raise NotJson(str(exc)) from None
    try:
        raw = upcast(raw)
    except (LookupError, TypeError, ValueError) as exc:
        raise WrongShape(f"cannot upcast {envelope.kind!r} v{envelope.v}: {exc}") from None
    try:
        return _DECODER.decode(ENCODER.encode(raw))
    except msgspec.ValidationError as exc:
        if envelope.v > CURRENT_VERSION.get(envelope.kind, 1):
            raise UnknownKind(f"{envelope.kind} v{envelope.v}", envelope.seq) from None
        raise WrongShape(f"invalid {envelope.kind!r} event: {exc}") from None


def preview(data: bytes, limit: int = 60) -> str:
    """The first ``limit`` bytes of ``data`` as text, for error messages."""
    text = data[:limit].decode("utf-8", "backslashreplace")
    return text + "..." if len(data) > limit else text
