"""Delta coalescing: the fragments of one streamed item become few events.

A model streams an answer as thousands of small fragments. Written one event
each, a 1,000-token answer costs a thousand ~200-byte envelopes for 4 KB of
text; the longest complaint about peers' session files is exactly that. So
consecutive deltas of one *stream* are merged into one event (SPEC §3.3).

The log and live followers want different windows: a line per second (or
per 4 KB) is cheap to store, while a reader wants text every few tens of
milliseconds. So a buffer also hands out *previews* (:meth:`DeltaBuffer.preview`):
its fragments not shown yet, merged, to be published live but not written.
A buffer is previewed in full before it is written, so a written delta's text
is exactly the previews of its buffer, in order (none, for a delta written
without buffering).

A stream is (kind, turn, item) and, for ``tool_call_delta``, the call id (see
:func:`stream_key`). A fragment joins the pending buffer when it belongs to
the same stream, arrives less than ``window_ms`` after the buffer's first
fragment, and the merged text stays within ``max_bytes`` (UTF-8). Otherwise
the buffer is closed (handed back to be written) and the fragment starts a new
one. Text is concatenated; a tool call's ``name`` and ``arguments`` are
concatenated separately. The merged event keeps the envelope of the first
fragment and its arrival time as ``at`` (so time-to-first-token survives the
merge); its ``seq`` is assigned when it is written.

Only the first buffer of a tool call names its ``call_id``: a later buffer
of the same stream leaves it ``""`` (its previews too, so a follower matches
them to the written event), since the item already holds it. A call that
streams a file's content writes a line a second, and the id was a tenth of
each.

The rules (:class:`Coalescer`, :func:`merge_run`) are pure: ``now`` is passed
in, nothing is written here. :class:`FlushTimers` is the one timer task that
closes each buffer ``window_ms`` after it opened; it runs in the recorder's
task group, and the recorder owns the other triggers (a non-delta event,
``flush()``, exit) and the writing.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Generic, TypeGuard, TypeVar

import anyio
import msgspec

from kun.contracts.events import (
    AssistantReasoningDelta,
    AssistantTextDelta,
    Event,
    ItemCompleted,
    ToolCallDelta,
    digest_text,
    streamed_field,
)
from kun.contracts.items import ToolCall

__all__ = [
    "DELTA_TYPES",
    "Coalescer",
    "Delta",
    "DeltaBuffer",
    "FlushTimers",
    "StreamKey",
    "compact_completions",
    "delta_size",
    "is_delta",
    "merge_run",
    "stream_key",
]

Delta = AssistantTextDelta | AssistantReasoningDelta | ToolCallDelta
DELTA_TYPES: frozenset[type[Event]] = frozenset(
    {AssistantTextDelta, AssistantReasoningDelta, ToolCallDelta}
)
StreamKey = tuple[type, str | None, str, str]
"""(event type, turn id, item id, call id or ``""``)."""

_replace = msgspec.structs.replace
_NO_ARGUMENTS = msgspec.Raw(b"{}")
_monotonic = time.monotonic
_Owner = TypeVar("_Owner")


def is_delta(event: Event) -> TypeGuard[Delta]:
    return type(event) in DELTA_TYPES


def stream_key(delta: Delta) -> StreamKey:
    call_id = delta.call_id if type(delta) is ToolCallDelta else ""
    return (type(delta), delta.turn_id, delta.item_id, call_id)


def _size(text: str) -> int:
    # ``isascii`` is O(1) in CPython: only non-ASCII text pays for an encode.
    return len(text) if text.isascii() else len(text.encode())


def delta_size(delta: Delta) -> int:
    """The UTF-8 size of the text a fragment carries."""
    if type(delta) is ToolCallDelta:
        return _size(delta.name) + _size(delta.arguments)
    return _size(delta.text)  # type: ignore[union-attr]


class DeltaBuffer:
    """Fragments of one stream waiting to become one event.

    ``at`` is the first fragment's arrival time (ms, the recorder's clock);
    ``token`` marks the last ``record`` call that added to it, so the recorder
    can return a merged event to the call whose fragment it carries.
    ``shown`` counts the ``parts`` already previewed, ``live_at`` is when the
    first part not previewed arrived, and ``timed`` the ``live_at`` a preview
    timer was last started for (so one run of parts starts one timer).
    """

    __slots__ = (
        "at",
        "first",
        "key",
        "live_at",
        "names",
        "parts",
        "shown",
        "size",
        "timed",
        "token",
    )

    def __init__(self, first: Delta, at: int, token: object = None, *, bare: bool = False) -> None:
        self.key = stream_key(first)
        if bare:
            first = _replace(first, call_id="")
        self.first = first
        self.at = at
        self.token = token
        self.shown = 0
        self.live_at = at
        self.timed = -1
        self.size = delta_size(first)
        if type(first) is ToolCallDelta:
            self.parts = [first.arguments]
            self.names = [first.name]
        else:
            self.parts = [first.text]  # type: ignore[union-attr]
            self.names = []

    def fits(self, delta: Delta, max_bytes: int) -> bool:
        """Same stream, and the merged text stays within ``max_bytes``."""
        return stream_key(delta) == self.key and self.size + delta_size(delta) <= max_bytes

    def add(self, delta: Delta, token: object = None) -> None:
        if type(delta) is ToolCallDelta:
            self.parts.append(delta.arguments)
            self.names.append(delta.name)
        else:
            self.parts.append(delta.text)  # type: ignore[union-attr]
        self.size += delta_size(delta)
        self.token = token

    @property
    def unshown(self) -> bool:
        return self.shown < len(self.parts)

    def preview(self, **stamp: object) -> Delta | None:
        """The fragments not previewed yet as one event (``seq`` 0, ``at``
        the first one's arrival, and ``stamp``'s fields), now marked
        previewed; ``None`` if none."""
        shown = self.shown
        if shown == len(self.parts):
            return None
        self.shown = len(self.parts)
        first = self.first
        if type(first) is ToolCallDelta:
            name = "".join(self.names[shown:])
            return _replace(
                first,
                at=self.live_at,
                name=name,
                arguments="".join(self.parts[shown:]),
                **stamp,
            )
        return _replace(first, at=self.live_at, text="".join(self.parts[shown:]), **stamp)

    def previewed(self, **stamp: object) -> Delta | None:
        """The fragments previewed so far as one event (``seq`` 0, the first
        one's ``at``, and ``stamp``'s fields), or ``None``: what a follower
        that joins now has missed of this buffer."""
        shown = self.shown
        if not shown:
            return None
        first = self.first
        if type(first) is ToolCallDelta:
            return _replace(
                first,
                at=self.at,
                name="".join(self.names[:shown]),
                arguments="".join(self.parts[:shown]),
                **stamp,
            )
        return _replace(first, at=self.at, text="".join(self.parts[:shown]), **stamp)

    def merged(self, **stamp: object) -> Delta:
        """One event carrying every fragment, stamped with the first's ``at``
        and ``stamp``'s fields (the writer's ``seq`` and ``thread_id``, so
        the event is built once)."""
        first = self.first
        if len(self.parts) == 1:
            return _replace(first, at=self.at, **stamp)
        if type(first) is ToolCallDelta:
            return _replace(
                first,
                at=self.at,
                name="".join(self.names),
                arguments="".join(self.parts),
                **stamp,
            )
        return _replace(first, at=self.at, text="".join(self.parts), **stamp)


class Coalescer:
    """The pending buffer of one thread, and the rules that close it.

    ``offer`` is called for each arriving fragment; it returns the buffers
    the fragment closed, in order, to be written now. ``take`` closes the
    pending buffer for any other trigger (a non-delta event, the timer,
    ``flush``, exit). At most one buffer is pending per thread, so writing
    closed buffers before anything else keeps the log's order the order of
    arrival.
    """

    __slots__ = ("called", "max_bytes", "pending", "window_ms")

    def __init__(self, window_ms: float, max_bytes: int) -> None:
        self.window_ms = window_ms
        self.max_bytes = max_bytes
        self.pending: DeltaBuffer | None = None
        self.called: StreamKey | None = None

    def offer(self, delta: Delta, now: int, token: object = None) -> list[DeltaBuffer]:
        closed: list[DeltaBuffer] = []
        buffer = self.pending
        if buffer is not None:
            if now - buffer.at < self.window_ms and buffer.fits(delta, self.max_bytes):
                if not buffer.unshown:
                    buffer.live_at = now
                buffer.add(delta, token)
                if buffer.size >= self.max_bytes:
                    closed.append(buffer)
                    self.pending = None
                return closed
            closed.append(buffer)
            self.pending = None
        buffer = DeltaBuffer(delta, now, token, bare=self._named_before(delta))
        if buffer.size >= self.max_bytes:
            closed.append(buffer)
        else:
            self.pending = buffer
        return closed

    def take(self) -> DeltaBuffer | None:
        buffer, self.pending = self.pending, None
        return buffer

    def _named_before(self, delta: Delta) -> bool:
        """Whether ``delta`` opens a later buffer of the tool call whose
        buffer opened last (so an earlier one, written first, names the
        call); only the last call is remembered, enough for calls that
        stream one after the other."""
        if type(delta) is not ToolCallDelta or not delta.call_id:
            return False
        key = stream_key(delta)
        if key == self.called:
            return True
        self.called = key
        return False


def merge_run(events: Iterable[Event], max_bytes: int) -> list[Event]:
    """``events`` with consecutive fragments of one stream merged (within
    ``max_bytes``): for a batch handed over at once, where no time passes
    between fragments. Non-delta events pass through unchanged, in order."""
    out: list[Event] = []
    buffer: DeltaBuffer | None = None
    for event in events:
        if is_delta(event):
            if buffer is not None and buffer.fits(event, max_bytes):
                buffer.add(event)
                continue
            if buffer is not None:
                out.append(buffer.merged())
            buffer = DeltaBuffer(event, event.at)
            continue
        if buffer is not None:
            out.append(buffer.merged())
            buffer = None
        out.append(event)
    if buffer is not None:
        out.append(buffer.merged())
    return out


def compact_completions(
    events: list[Event], streamed_text: Callable[[str | None, str], str | None]
) -> list[Event]:
    """``events`` with each ``item_completed`` whose streamed field (an
    assistant text's or reasoning's ``text``, a tool call's
    ``arguments_text``) is exactly what the log built for it
    (``streamed_text(turn_id, item_id)``, asked before ``events`` apply)
    recorded as ``""`` plus ``text_from_deltas``, so the line does not repeat
    the text; a tool call whose raw ``arguments`` are that text's bytes is
    recorded with ``{}`` and ``arguments_from_text`` too. An item that
    another event of the batch touched first keeps its text: the projection
    does not show that event yet."""
    out: list[Event] = []
    touched: set[str] = set()
    for event in events:
        if type(event) is ItemCompleted:
            item = event.item
            field = streamed_field(item)
            if (
                field is not None
                and (text := getattr(item, field))
                and item.id not in touched
                and event.text_from_deltas is None
                and streamed_text(event.turn_id, item.id) == text
            ):
                if type(item) is ToolCall and bytes(item.arguments) == text.encode():
                    call = _replace(item, arguments_text="", arguments=_NO_ARGUMENTS)
                    event = _replace(
                        event,
                        item=call,
                        text_from_deltas=digest_text(text),
                        arguments_from_text=True,
                    )
                else:
                    compact = _replace(item, **{field: ""})
                    event = _replace(event, item=compact, text_from_deltas=digest_text(text))
            touched.add(item.id)
        else:
            item_id = getattr(event, "item_id", None) or getattr(
                getattr(event, "item", None), "id", None
            )
            if item_id:
                touched.add(item_id)
        out.append(event)
    return out


class FlushTimers(Generic[_Owner]):
    """Deadlines ``window_ms`` after each buffer opened, served by one task.

    ``schedule`` is synchronous and cheap (a heap push); :meth:`run`, started
    once in a task group, awaits the earliest deadline and calls
    ``flush(owner, buffer)``. A buffer closed early by another trigger is not
    unscheduled: ``flush`` must check that ``buffer`` is still pending.

    Deadlines are ``time.monotonic()`` values, not ``anyio.current_time()``:
    a buffer opens per delta at real token rates, and the anyio call costs
    ten times the clock read. Only the relative delay reaches anyio, so the
    two clocks never need to agree.
    """

    def __init__(
        self, window_ms: float, flush: Callable[[_Owner, DeltaBuffer], Awaitable[None]]
    ) -> None:
        self._window = window_ms / 1000
        self._flush = flush
        self._heap: list[tuple[float, int, _Owner, DeltaBuffer]] = []
        self._ids = itertools.count()
        self._wakeup = anyio.Event()

    def schedule(self, owner: _Owner, buffer: DeltaBuffer) -> None:
        entry = (_monotonic() + self._window, next(self._ids), owner, buffer)
        heapq.heappush(self._heap, entry)
        if self._heap[0] is entry:
            self._wakeup.set()

    async def run(self) -> None:
        heap = self._heap
        while True:
            while heap and heap[0][0] <= _monotonic():
                _, _, owner, buffer = heapq.heappop(heap)
                await self._flush(owner, buffer)
            # No await between the check above and the new Event: a schedule()
            # in between would set the old one and be missed.
            delay = heap[0][0] - _monotonic() if heap else None
            self._wakeup = anyio.Event()
            with anyio.move_on_after(delay):
                await self._wakeup.wait()
