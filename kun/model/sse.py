"""An incremental, sans-IO parser for Server-Sent Events.

Follows the WHATWG event-stream interpretation: lines end in CRLF, LF or a
lone CR (a CR ending one read and an LF starting the next are one line end);
an empty line dispatches the event; ``data`` lines are joined with ``\\n``;
one space after the colon is dropped; ``event``, ``id`` and ``retry`` fields
are honoured; a leading UTF-8 BOM is dropped; lines starting with ``:`` are
comments.

Lines are split on CR and LF only, never with ``str.splitlines()``: that also
splits on U+2028, U+0085 and friends, which models emit inside JSON strings.

Speed: the input is kept as bytes. CR line ends are rewritten to LF once per
read (one C-level ``replace``), so every stream, whatever its framing, takes
the same path: split on ``b"\\n\\n"`` and hand on complete frames only, so a
UTF-8 character split across reads is never decoded in halves. Event data
stays bytes until someone needs text (see :class:`SSEEvent`).
The common frames ``data: <one line>`` and ``event: <name>\\ndata: <one
line>`` are turned into events without splitting them into lines; a count
of line ends per read proves their shape, so no frame is scanned twice.

Comments (``: keep-alive``) produce no event; they are counted in
:attr:`SSEParser.comments`, because a stream that only sends comments is
alive but makes no progress (idle timers must not be reset by them).
"""

from __future__ import annotations

import msgspec

__all__ = ["DONE", "SSEEvent", "SSEParser"]

DONE = "[DONE]"
"""The ``data`` of the sentinel event OpenAI-style streams end with."""

_DONE = DONE.encode()
_BOM = b"\xef\xbb\xbf"
_DATA = b"data: "
_EVENT = b"event: "
_NAMELESS = b"event: \ndata: "


class SSEEvent(msgspec.Struct, frozen=True, gc=False):
    """One dispatched event.

    ``raw`` is the event's data as sent: UTF-8 bytes, ``data`` lines joined
    with ``\\n``; :attr:`data` is that text, invalid UTF-8 replaced. Stream
    decoders hand ``raw`` straight to msgspec (which checks UTF-8 itself and
    skips building a ``str``) and fall back to :attr:`data` only when it
    fails. ``id`` is the stream's last event id at the time of dispatch (it
    persists across events, as the spec says).
    """

    raw: bytes
    event: str = "message"
    id: str = ""

    @property
    def data(self) -> str:
        """The data as text; invalid UTF-8 is replaced, never fatal."""
        return self.raw.decode("utf-8", "replace")

    @property
    def is_done(self) -> bool:
        """Whether this is the ``[DONE]`` sentinel."""
        return self.raw == _DONE


class SSEParser:
    """Feed raw bytes as they arrive; get the events completed by them.

    ``feed(data)`` never raises on bad input: event data is handed on as
    bytes (:attr:`SSEEvent.data` replaces invalid UTF-8 with U+FFFD), unknown
    fields are ignored. Memory is bounded by the largest event, which is
    buffered whole until its blank line. ``flush()`` ends the stream: it
    dispatches a last event whose terminating blank line never came (relays
    often end with ``data: [DONE]`` and no blank line; the spec would drop
    it). A frame cut off mid-JSON that way cannot decode, so the stream
    decoders skip it as they skip any non-JSON frame.

    Attributes: ``comments`` counts comment lines, ``events`` dispatched
    events, ``retry`` is the last valid ``retry:`` value (milliseconds) or
    ``None``, ``last_event_id`` the id the next event will carry.
    """

    __slots__ = (
        "_pieces",
        "_skip_lf",
        "_started",
        "comments",
        "events",
        "last_event_id",
        "retry",
    )

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._skip_lf = False
        self._started = False
        self.comments = 0
        self.events = 0
        self.last_event_id = ""
        self.retry: int | None = None

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Consume one read; return the events it completed, in order."""
        if not data:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if data[0] == 10:
                data = data[1:]
                if not data:
                    return []
        if b"\r" in data:
            self._skip_lf = data[-1] == 13
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        pieces = self._pieces
        if pieces:
            if b"\n\n" not in data and not (data[0] == 10 and pieces[-1][-1] == 10):
                pieces.append(data)
                return []
            pieces.append(data)
            data = b"".join(pieces)
            pieces.clear()
        if not self._started:
            if len(data) < len(_BOM) and _BOM.startswith(data):
                pieces.append(data)
                return []
            self._started = True
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
        frames = data.split(b"\n\n")
        rest = frames.pop()
        if rest:
            pieces.append(rest)
        if not frames:
            return []
        inner = data.count(b"\n") - rest.count(b"\n") - 2 * len(frames)
        return self._dispatch(frames, inner)

    def flush(self) -> list[SSEEvent]:
        """End of stream: dispatch what is left, even without its blank line."""
        data = b"".join(self._pieces)
        self._pieces.clear()
        self._skip_lf = False
        if not self._started:
            self._started = True
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
        return self._dispatch([data]) if data else []

    def _dispatch(self, frames: list[bytes], inner: int = -1) -> list[SSEEvent]:
        """Turn complete frames into events. ``inner`` is the number of line
        ends inside the frames (-1: unknown); it proves the common shapes
        without scanning each frame."""
        if inner == 0:
            out = self._single_lines(frames)
        elif inner == len(frames) and -1 not in (ends := [f.find(b"\n") for f in frames]):
            out = self._two_lines(frames, ends)
        else:
            out = self._checked(frames)
        self.events += len(out)
        return out

    def _single_lines(self, frames: list[bytes]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        last_id = self.last_event_id
        for frame in frames:
            if frame.startswith(_DATA):
                out.append(SSEEvent(frame[6:], "message", last_id))
            elif frame:
                event = self._frame(frame)
                last_id = self.last_event_id
                if event is not None:
                    out.append(event)
        return out

    def _two_lines(self, frames: list[bytes], ends: list[int]) -> list[SSEEvent]:
        """Frames proven to hold exactly one line end, mostly ``event:`` then
        ``data:``. Runs of events share a name, so the previous header is
        matched whole before anything is sliced."""
        out: list[SSEEvent] = []
        last_id = self.last_event_id
        header, skip, name = _NAMELESS, len(_NAMELESS), "message"
        for frame, end in zip(frames, ends, strict=True):
            if frame.startswith(header):
                out.append(SSEEvent(frame[skip:], name, last_id))
            elif frame.startswith(_EVENT) and frame.startswith(_DATA, end + 1):
                skip = end + 7
                header = frame[:skip]
                name = frame[7:end].decode("utf-8", "replace") or "message"
                out.append(SSEEvent(frame[skip:], name, last_id))
            else:
                event = self._frame(frame)
                last_id = self.last_event_id
                if event is not None:
                    out.append(event)
        return out

    def _checked(self, frames: list[bytes]) -> list[SSEEvent]:
        out: list[SSEEvent] = []
        for frame in frames:
            if frame.startswith(_DATA) and b"\n" not in frame:
                out.append(SSEEvent(frame[6:], "message", self.last_event_id))
            elif frame:
                event = self._frame(frame)
                if event is not None:
                    out.append(event)
        return out

    def _frame(self, frame: bytes) -> SSEEvent | None:
        """Interpret one frame line by line; a frame holds no blank line
        except, possibly, a first one, which dispatches nothing."""
        data: list[bytes] = []
        event = ""
        for line in frame.split(b"\n"):
            if not line:
                continue
            if line[0] == 58:
                self.comments += 1
                continue
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                data.append(value)
            elif name == b"event":
                event = value.decode("utf-8", "replace")
            elif name == b"id":
                if b"\0" not in value:
                    self.last_event_id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():
                self.retry = int(value)
        if not data:
            return None
        return SSEEvent(b"\n".join(data), event or "message", self.last_event_id)
