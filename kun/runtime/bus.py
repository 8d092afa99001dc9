"""In-process publish/subscribe of a thread's events, keyed by seq.

A follower asks for "everything after seq N" and gets the backlog read from
the log, then the live events, with no gap and no duplicate. The recipe
(SPEC §3.3):

1. subscribe to live events *first*, buffering them;
2. read the backlog from the log (``backlog(after)`` streams ``seq > after``);
3. then serve the buffer, skipping events whose seq was already served.

Because the writer persists before it publishes, an event is either in the
log before the backlog read starts, or published after the follower
subscribed (or both, which the seq check absorbs): nothing falls in between.

A slow follower must not slow the writer, and must not lose events: each
follower's buffer is bounded; when it overflows the buffer is dropped and the
follower goes back to the log for everything after the last seq it served,
then resumes live. ``publish`` never blocks and never awaits.

A follower also guards the invariant itself: a live event more than one past
the last served seq sends it back to the log, and if the log does not have
the missing events either, :class:`FollowerGap` is raised rather than
skipping them.

Followers are held weakly: one the caller drops (stops iterating and lets
go) leaves the bus on its own; :meth:`Follower.aclose` leaves at once.

A tap (:meth:`EventBus.tap`) sees every thread's events as they are
published, live only: a dashboard's firehose. It has no log to go back to,
so what it does when its consumer lags is its own business.

Previews. The log merges a streamed item's fragments for up to a second
(:mod:`kun.runtime.coalesce`); a reader wants them every few tens of
milliseconds. So the writer also hands the bus *previews*
(:meth:`EventBus.preview`): delta events with ``seq`` 0, never persisted,
given only to followers that asked for them (``live=True``; taps never get
them). Durable events are served exactly as without previews (once each, in
seq order), and the writer keeps one invariant: before a buffered delta is
written, every fragment of it was previewed, so a durable delta's text is
exactly the previews of its stream since the previous durable event, or none
was published for it. The consumer rule, which :class:`LiveText`
implements: per stream, count the characters previewed and not yet durable;
a durable delta of length ``L`` skips its first ``min(L, pending)``
characters. A follower drops a preview whose durable event it has already
served (read from the log while the preview was queued) or that follows a
gap, and drops previews on overflow: the durable event carries their text
later, and the rule shows it once. The rule needs every preview of a buffer
from its first, so a follower that joins (or overflows) while a buffer is
being previewed takes none of that buffer's previews: all of a buffer's
previews follow the same durable seq (writing it publishes the next), and
only the first is marked ``first``. Unless the writer can say what such a
follower missed (``catch_up``): the recorder hands it the pending buffer's
text previewed so far, as that buffer's first preview.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable, Iterator

import anyio
import msgspec
from anyio.lowlevel import checkpoint, checkpoint_if_cancelled

from kun.contracts.events import Event, ToolCallDelta
from kun.runtime.coalesce import Delta, StreamKey, is_delta, stream_key
from kun.runtime.errors import FollowerGap

__all__ = ["DEFAULT_BUFFER", "EventBus", "Follower", "FollowerGap", "LiveText"]

DEFAULT_BUFFER = 1024
"""Events a follower may fall behind before it re-reads from the log."""

_YIELD_EVERY = 64
"""A follower that never has to wait yields to the event loop this often, so
a consumer replaying a long backlog does not starve the writer."""

Backlog = Callable[[int], Iterator[Event]]
CatchUp = Callable[[], "tuple[Delta, int] | None"]
"""What a live follower joining now missed of the buffer being previewed:
its text previewed so far as one delta, and the seq it follows."""
_replace = msgspec.structs.replace
Sink = Callable[[Event], None]


class EventBus:
    """Live events of every thread, fanned out to that thread's followers."""

    def __init__(self, *, buffer: int = DEFAULT_BUFFER) -> None:
        if buffer < 1:
            raise ValueError("a follower's buffer holds at least one event")
        self._buffer = buffer
        self._followers: dict[str, weakref.WeakSet[Follower]] = {}
        self._taps: dict[object, Sink] = {}

    def publish(self, event: Event) -> None:
        """Hand ``event`` to its thread's followers. Call it only once the
        event is persisted, in seq order. Never blocks."""
        if self._taps:
            for sink in tuple(self._taps.values()):
                sink(event)
        followers = self._followers.get(event.thread_id)
        if followers is None:
            return
        if not followers:
            del self._followers[event.thread_id]
            return
        for follower in followers:
            follower.push(event)

    def preview(self, delta: Delta, after: int, *, first: bool = True) -> None:
        """Hand a preview (a delta with ``seq`` 0, not persisted) to the
        thread's live followers; ``after`` is the seq of the thread's last
        durable event, published before it; ``first`` says it starts its
        buffer's text (the others continue it, with the same ``after``).
        Never blocks."""
        followers = self._followers.get(delta.thread_id)
        if not followers:
            return
        entry = _Preview(delta, after, first)
        for follower in followers:
            if follower.live:
                follower.push(entry)

    def follow(
        self,
        thread_id: str,
        *,
        after: int,
        backlog: Backlog,
        live: bool = False,
        catch_up: CatchUp | None = None,
    ) -> Follower:
        """Every event of ``thread_id`` with ``seq > after``: first from
        ``backlog``, then live, in seq order, with no gap and no duplicate,
        and with ``live`` the previews too (see the module docstring),
        starting with ``catch_up()``'s when it has one.
        The follower subscribes when iteration starts; it ends when the
        caller stops iterating (or calls :meth:`Follower.aclose`)."""
        return Follower(self, thread_id, after, backlog, self._buffer, live, catch_up)

    def tap(self, sink: Sink) -> Callable[[], None]:
        """Call ``sink`` with every event of every thread as it is published
        (no backlog), until the returned function is called. ``sink`` runs
        inside :meth:`publish`: it must not block or raise."""
        token = object()
        self._taps[token] = sink

        def untap() -> None:
            self._taps.pop(token, None)

        return untap

    def followers(self, thread_id: str) -> int:
        """How many followers ``thread_id`` has now."""
        return len(self._followers.get(thread_id, ()))

    def followed(self) -> list[str]:
        """The threads that have followers now."""
        return [thread_id for thread_id, followers in self._followers.items() if followers]

    def nudge(self, thread_id: str, last_seq: int) -> None:
        """The thread's log reaches ``last_seq`` (another process wrote it,
        so nothing was published here): followers behind it read the log."""
        for follower in tuple(self._followers.get(thread_id, ())):
            follower.nudge(last_seq)

    def _join(self, follower: Follower) -> None:
        followers = self._followers.get(follower.thread_id)
        if followers is None:
            followers = self._followers[follower.thread_id] = weakref.WeakSet()
        followers.add(follower)

    def _leave(self, follower: Follower) -> None:
        followers = self._followers.get(follower.thread_id)
        if followers is not None:
            followers.discard(follower)


class _Preview:
    """A preview in a follower's queue, with the seq it follows and whether
    it starts its buffer."""

    __slots__ = ("after", "delta", "first")

    def __init__(self, delta: Delta, after: int, first: bool) -> None:
        self.delta = delta
        self.after = after
        self.first = first


class Follower:
    """An async iterator over one thread's events after a seq (see
    :meth:`EventBus.follow`). ``last`` is the seq of the last durable event
    served; ``rereads`` counts the times it went back to the log (overflow
    or gap); ``live`` followers also get previews (``seq`` 0)."""

    def __init__(
        self,
        bus: EventBus,
        thread_id: str,
        after: int,
        backlog: Backlog,
        capacity: int,
        live: bool = False,
        catch_up: CatchUp | None = None,
    ) -> None:
        self.thread_id = thread_id
        self._catch_up = catch_up
        self.live = live
        self.last = after
        self.rereads = 0
        self._bus = bus
        self._backlog = backlog
        self._capacity = capacity
        self._queue: deque[Event | _Preview] = deque()
        self._overflowed = False
        self._source: Iterator[Event] | None = None
        self._need = 0
        self._waiter: anyio.Event | None = None
        self._joined = False
        self._closed = False
        self._served = 0
        self._previewing = -1

    def push(self, event: Event | _Preview) -> None:
        """Called by the bus: queue a live event or preview, or overflow."""
        if not self._overflowed:
            if len(self._queue) < self._capacity:
                self._queue.append(event)
            else:
                self._overflowed = True
                self._queue.clear()
        waiter = self._waiter
        if waiter is not None:
            waiter.set()

    def nudge(self, last_seq: int) -> None:
        """Called by the bus: the log reaches ``last_seq``; a follower waiting
        behind it goes back to the log (see :meth:`EventBus.nudge`)."""
        if self._closed or not self._joined or self._source is not None or last_seq <= self.last:
            return
        self._reread(0)
        waiter = self._waiter
        if waiter is not None:
            waiter.set()

    def __aiter__(self) -> Follower:
        return self

    async def __anext__(self) -> Event:
        event = await self._ready()
        if event is None:
            raise StopAsyncIteration
        await self._served_some(1)
        return event

    async def batch(self, most: int) -> list[Event]:
        """The next event, waited for as by iteration, and up to ``most - 1``
        more that are ready now; ``[]`` once closed. A consumer that handles
        events in groups (one socket write for many) pays for one wake and
        one checkpoint per group instead of per event."""
        first = await self._ready()
        if first is None:
            return []
        batch = [first]
        while len(batch) < most:
            event = self._next_ready()
            if event is None:
                break
            if event.seq:
                self.last = event.seq
            batch.append(event)
        await self._served_some(len(batch))
        return batch

    async def _ready(self) -> Event | None:
        """The next event to serve (``last`` updated), waiting for one;
        ``None`` once closed."""
        if not self._joined and not self._closed:
            self._joined = True
            self._bus._join(self)
            if self.live and self._catch_up is not None:
                # In the same step as joining: no preview falls in between.
                caught = self._catch_up()
                if caught is not None:
                    self._queue.append(_Preview(caught[0], caught[1], True))
            self._source = self._backlog(self.last)
        while not self._closed:
            event = self._next_ready()
            if event is not None:
                if event.seq:
                    self.last = event.seq
                return event
            waiter = self._waiter = anyio.Event()
            try:
                await waiter.wait()
            finally:
                self._waiter = None
        return None

    async def _served_some(self, count: int) -> None:
        """Check for cancellation, and every ``_YIELD_EVERY`` events served
        yield to the event loop."""
        before, self._served = self._served, self._served + count
        if before // _YIELD_EVERY == self._served // _YIELD_EVERY:
            await checkpoint_if_cancelled()
        else:
            await checkpoint()

    def _next_ready(self) -> Event | None:
        """The next event to serve without waiting, or ``None``."""
        while True:
            if self._source is not None:
                for event in self._source:
                    if event.seq > self.last:
                        return event
                self._source = None
                if self.last < self._need:
                    raise FollowerGap(self.thread_id, self.last, self._need)
                self._need = 0
            if self._overflowed:
                # Re-subscribe before re-reading: what is published from now
                # on is queued, what was dropped is already in the log.
                self._overflowed = False
                self._previewing = -1
                self._queue.clear()
                self._reread(0)
                continue
            queue = self._queue
            while queue:
                entry = queue.popleft()
                if isinstance(entry, _Preview):
                    if entry.after == self.last and (
                        entry.first or entry.after == self._previewing
                    ):
                        self._previewing = entry.after
                        return entry.delta
                    continue
                if entry.seq <= self.last:
                    continue
                if entry.seq == self.last + 1:
                    return entry
                self._reread(entry.seq)
                break
            else:
                return None

    def _reread(self, need: int) -> None:
        self.rereads += 1
        self._need = need
        self._source = self._backlog(self.last)

    async def aclose(self) -> None:
        """Leave the bus now; further iteration ends at once."""
        self._closed = True
        self._bus._leave(self)
        self._queue.clear()
        if self._waiter is not None:
            self._waiter.set()
        source, self._source = self._source, None
        close = getattr(source, "close", None)
        if close is not None:
            close()
        await checkpoint()


class LiveText:
    """The consumer rule for a live follower's deltas (module docstring):
    :meth:`fresh` returns each delta with only the text not shown yet, or
    ``None`` when it holds nothing new; any other event as it is."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending: dict[StreamKey, tuple[int, int]] = {}

    def fresh(self, event: Event) -> Event | None:
        if not is_delta(event):
            return event
        key = stream_key(event)
        call = type(event) is ToolCallDelta
        name = event.name if call else ""  # type: ignore[union-attr]
        text = event.arguments if call else event.text  # type: ignore[union-attr]
        if not event.seq:
            names, chars = self._pending.get(key, (0, 0))
            self._pending[key] = (names + len(name), chars + len(text))
            return event
        pending = self._pending.pop(key, None)
        if pending is None:
            return event
        skip_name, skip = min(pending[0], len(name)), min(pending[1], len(text))
        if pending != (skip_name, skip):
            self._pending[key] = (pending[0] - skip_name, pending[1] - skip)
        if skip_name == len(name) and skip == len(text):
            return None
        if call:
            return _replace(event, name=name[skip_name:], arguments=text[skip:])
        return _replace(event, text=text[skip:])
