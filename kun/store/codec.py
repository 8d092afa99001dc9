"""Events to log lines and back: one Encoder, one Decoder, made once.

Decoding has a fast path and a slow one. The fast path is a typed decode of
the ``Event`` union (:func:`decode_block` does a whole block of lines in one
call). Only when it fails, or when an event's ``v`` is not its kind's current
version, does a line take the slow path (:func:`decode_line`): decode
a tiny envelope to learn the kind (msgspec has no unknown-tag fallback, so
this is how an unknown kind is told apart from a broken line), decode the line
to a mapping, :func:`kun.domain.upcast.upcast` it, and decode the result as an
``Event``. The upcast result is re-encoded rather than ``msgspec.convert``-ed
because ``convert`` cannot build the ``msgspec.Raw`` of a tool call's
arguments from a mapping.

:func:`decode_line` reports a line it cannot turn into an event with a
:class:`LineError`; the reader turns those into ``CorruptLog`` with the file
and line number, which only it knows.

A line leaves out the envelope's ``thread_id`` (:func:`encode_line`,
:func:`encode_into`): the file is the thread's own, and on a delta line of a
few characters the id was the largest field. Events keep it in memory; the
decoders take the thread a file belongs to and fill it into each event that
has none (lines written before, or copied from another thread by a fork,
keep the id they name). The encoder writes ``kind``, ``seq``, ``at``, then
``thread_id``, so the envelope's is the first ``,"thread_id":`` of a line;
a tool call's raw arguments may hold such a key too, later on the line.

One line is one event. ``decode_lines`` would take any run of JSON values
separated by whitespace (two events on a line, one event over two lines), so
the fast path decodes a block as one JSON array, ``[L1,\nL2,\n...]``: a comma
put before a newline that is not between two values breaks the JSON (no
value may hold ``[,`` ``,,`` ``:,`` or a trailing comma), so each line holds
whole values, and as many events as lines means one each. What fails goes to
the slow path, which decodes each line alone. The framing costs about a
tenth of the decode; counting newlines with ``bytes.count`` would cost a
third, and a one-element array per line a quarter.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec
from msgspec.structs import force_setattr

from kun.contracts.events import (
    EVENT_TYPES,
    KINDS,
    EpochMs,
    Event,
    EventBase,
    ItemCompleted,
    ItemCreated,
    ItemUpdated,
    Seq,
)
from kun.contracts.items import ToolCall
from kun.domain.upcast import CURRENT_VERSION, upcast

__all__ = [
    "ENCODER",
    "LineError",
    "NotJson",
    "TooDeep",
    "UnknownKind",
    "WrongShape",
    "decode_block",
    "decode_line",
    "encode_into",
    "encode_line",
    "preview",
    "stale_types",
]

ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Event)
_FRAMED = msgspec.json.Decoder(list[Event])
_ANY = msgspec.json.Decoder()

_ITEM_EVENTS: frozenset[type[EventBase]] = frozenset({ItemCreated, ItemUpdated, ItemCompleted})
_TAG: dict[type[EventBase], str] = {t: str(t.__struct_config__.tag) for t in EVENT_TYPES}


class _Envelope(msgspec.Struct):
    """What any line must hold, whatever its kind: a seq out of range is
    corruption even on a kind this kun does not know (a writer would carry on
    from it)."""

    kind: str
    seq: Seq | None = None
    at: EpochMs = 0
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


class TooDeep(WrongShape):
    """Nested deeper than the decoder can follow (it raises ``RecursionError``
    at about a thousand levels, fewer on a deeper stack). A bad line, never a
    torn tail: the same bytes may be a good event to a shallower caller."""

    def __init__(self) -> None:
        super().__init__("nested too deeply to decode")


class UnknownKind(LineError):
    """A kind this version does not know (or a newer version of a known kind
    that no longer decodes): written by a newer kun."""

    def __init__(self, kind: str, seq: int) -> None:
        self.kind = kind
        self.seq = seq
        super().__init__(f"unknown event kind {kind!r}")


_encode_into = ENCODER.encode_into
_THREAD_FIELDS: dict[str, bytes] = {}


def _thread_field(thread_id: str) -> bytes:
    field = _THREAD_FIELDS.get(thread_id)
    if field is None:
        if len(_THREAD_FIELDS) > 1024:
            _THREAD_FIELDS.clear()
        field = _THREAD_FIELDS[thread_id] = b',"thread_id":' + ENCODER.encode(thread_id)
    return field


def encode_line(event: Event) -> bytes:
    """The event as one log line, ``\\n`` included, without its thread id."""
    buffer = bytearray()
    encode_into(event, buffer, 0)
    buffer.append(10)
    return bytes(buffer)


def encode_into(event: Event, buffer: bytearray, offset: int) -> None:
    """Encode ``event`` into ``buffer`` at ``offset`` (as
    ``Encoder.encode_into``) without the envelope's ``thread_id``."""
    _encode_into(event, buffer, offset)
    if event.thread_id:
        field = _thread_field(event.thread_id)
        start = buffer.find(field, offset)
        del buffer[start : start + len(field)]


def stale_types() -> dict[type[EventBase], int]:
    """Event types whose current version is above 1, with that version: an
    event of such a type decoded with a lower ``v`` must be upcast (every
    other type is current at 1). Empty while no kind has changed shape.
    Read afresh per read, so a patched registry applies."""
    return {t: CURRENT_VERSION[tag] for t, tag in _TAG.items() if CURRENT_VERSION.get(tag, 1) > 1}


def decode_block(
    data: bytes, start: int, end: int, stale: Mapping[type[EventBase], int], thread_id: str = ""
) -> list[Event] | None:
    """Decode the lines ``data[start:end]`` (``end`` just after a newline) in
    one call; ``None`` if any line needs the slow path (then decode the block
    line by line to find which): a line that is not exactly one event, a
    blank line, or an event whose ``v`` is not its kind's current version.

    A decoded ``msgspec.Raw`` is a view that keeps its whole input alive, so
    the arguments of tool calls are copied out of the block before anyone sees
    them (in place: the items are brand new): a replay that keeps every tool
    call would otherwise keep the whole log in memory.
    """
    body = data[start : end - 1].replace(b"\n", b",\n")
    lines = len(body) - (end - 1 - start) + 1
    try:
        events = _FRAMED.decode(b"[" + body + b"]")
    except (msgspec.DecodeError, RecursionError):
        return None
    if len(events) != lines:
        return None
    fill, item_events, call = force_setattr, _ITEM_EVENTS, ToolCall
    for event in events:
        kind = type(event)
        if not event.thread_id:
            fill(event, "thread_id", thread_id)
        if event.v != 1:
            if event.v != stale.get(kind, 1):
                return None
        elif stale and kind in stale:
            return None
        if kind in item_events:
            item = event.item  # type: ignore[union-attr]
            if type(item) is call:
                fill(item, "arguments", item.arguments.copy())
    return events


def decode_line(line: bytes, thread_id: str = "") -> Event:
    """Decode one line (without its newline) into an event, upcasting an old
    version, with ``thread_id`` if the line names none; raise a
    :class:`LineError` subclass for anything else (a known kind at a version
    newer than this kun's is an :class:`UnknownKind`)."""
    event = _decode_line(line)
    if not event.thread_id:
        force_setattr(event, "thread_id", thread_id)
    return event


def _decode_line(line: bytes) -> Event:
    try:
        event = _DECODER.decode(line)
    except msgspec.ValidationError:
        return _decode_slow(line)
    except msgspec.DecodeError as exc:
        raise _not_json(exc) from None
    except RecursionError:
        raise TooDeep() from None
    tag = _TAG[type(event)]
    current = CURRENT_VERSION.get(tag, 1)
    if event.v > current:
        raise UnknownKind(f"{tag} v{event.v}", event.seq)
    if event.v < current:
        return _decode_slow(line)
    return event


def _not_json(exc: msgspec.DecodeError) -> NotJson:
    if "trailing characters" in str(exc):
        return NotJson(f"{exc}: more than one JSON value, but a line holds one event")
    return NotJson(str(exc))


def _decode_slow(line: bytes) -> Event:
    try:
        envelope = _ENVELOPE.decode(line)
        raw = _ANY.decode(line)
    except msgspec.ValidationError as exc:
        raise WrongShape(f"not an event: {exc}") from None
    except msgspec.DecodeError as exc:
        raise _not_json(exc) from None
    except RecursionError:
        raise TooDeep() from None
    if envelope.kind not in KINDS:
        raise UnknownKind(envelope.kind, envelope.seq or 0)
    if envelope.v < 1:
        raise WrongShape(f"{envelope.kind!r} has version {envelope.v}; versions start at 1")
    try:
        raw = upcast(raw)
    except (LookupError, TypeError, ValueError) as exc:
        raise WrongShape(f"cannot upcast {envelope.kind!r} v{envelope.v}: {exc}") from None
    try:
        return _DECODER.decode(ENCODER.encode(raw))
    except msgspec.ValidationError as exc:
        if envelope.v > CURRENT_VERSION.get(envelope.kind, 1):
            raise UnknownKind(f"{envelope.kind} v{envelope.v}", envelope.seq or 0) from None
        raise WrongShape(f"invalid {envelope.kind!r} event: {exc}") from None


def preview(data: bytes, limit: int = 60) -> str:
    """The first ``limit`` bytes of ``data`` as text, for error messages."""
    text = data[:limit].decode("utf-8", "backslashreplace")
    return text + "..." if len(data) > limit else text
