"""Telling a torn tail from a last line that holds events.

A crash in the middle of an append leaves a prefix of what one ``os.write``
wrote: whole lines, then part of one line. So the bytes after the last good
line are *torn*, and may be cut, only if they hold no complete event, or
(without a newline) are exactly one whole event that lacks it (the write
stopped just before its last byte; the append was never acknowledged, and the
writer records what it cut). Anything else (two events on one line, an event
followed by more bytes, bytes before an event, a line nested too deeply to
read) was not written by a crashing kun: it is a bad line, which a reader
refuses and a writer will not cut, so no valid event is ever deleted.

To find complete events without trusting the line's framing, each place an
event may start (the first non-blank byte, and every ``{"kind"``, which only
an object's first key can produce outside a string) is decoded up to the end
of its JSON value. This runs once per torn tail, never on the read path.
"""

from __future__ import annotations

import json

import msgspec

from kun.contracts.events import EpochMs, Seq
from kun.store.codec import LineError, TooDeep, UnknownKind, decode_line

__all__ = ["MAX_CANDIDATES", "untorn_reason"]

MAX_CANDIDATES = 64
"""Places tried per tail; past this, the tail is not treated as torn."""

_SPACE = b" \t\r\n"
_KIND = b'{"kind"'
_SCAN = json.JSONDecoder()


class _Envelope(msgspec.Struct):
    kind: str
    seq: Seq
    at: EpochMs
    thread_id: str


_ENVELOPE = msgspec.json.Decoder(_Envelope)


def untorn_reason(data: bytes, *, terminated: bool) -> str | None:
    """Why ``data``, a last line that is not one good event (``terminated``:
    it ends with a newline, not included in ``data``), must not be cut as a
    torn tail; ``None`` when it may be."""
    body = data.rstrip(_SPACE)
    first = len(body) - len(body.lstrip(_SPACE))
    text = body.decode("latin-1")
    found = 0
    tried = 0
    start = first
    while 0 <= start < len(body):
        tried += 1
        if tried > MAX_CANDIDATES:
            return f"it has more than {MAX_CANDIDATES} places where an event may start"
        try:
            end = _SCAN.raw_decode(text, start)[1]
        except RecursionError:
            return "it is nested too deeply to tell whether it holds an event"
        except ValueError:
            end = -1
        if end > 0:
            verdict = _is_event(body[start:end])
            if verdict is None:
                return "it is nested too deeply to tell whether it holds an event"
            if verdict:
                if not terminated and start == first and end == len(body):
                    return None
                found += 1
        start = body.find(_KIND, start + 1)
    if found:
        return f"it holds {'a complete event' if found == 1 else f'{found} complete events'}"
    return None


def _is_event(value: bytes) -> bool | None:
    """Whether one JSON value is an event (of a kind this kun knows, or with
    a whole envelope if not); ``None`` if too deep to tell."""
    try:
        decode_line(value)
    except UnknownKind:
        try:
            _ENVELOPE.decode(value)
        except (msgspec.DecodeError, RecursionError):
            return False
    except TooDeep:
        return None
    except LineError:
        return False
    return True
