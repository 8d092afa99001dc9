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
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Callable, Iterator

import anyio
from anyio.lowlevel import checkpoint, checkpoint_if_cancelled

from kun.contracts.events import Event
from kun.runtime.errors import FollowerGap

__all__ = ["DEFAULT_BUFFER", "EventBus", "Follower", "FollowerGap"]

DEFAULT_BUFFER = 1024
"""Events a follower may fall behind before it re-reads from the log."""

_YIELD_EVERY = 64
"""A follower that never has to wait yields to the event loop this often, so
a consumer replaying a long backlog does not starve the writer."""

Backlog = Callable[[int], Iterator[Event]]
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

    def follow(self, thread_id: str, *, after: int, backlog: Backlog) -> Follower:
        """Every event of ``thread_id`` with ``seq > after``: first from
        ``backlog``, then live, in seq order, with no gap and no duplicate.
        The follower subscribes when iteration starts; it ends when the
        caller stops iterating (or calls :meth:`Follower.aclose`)."""
        return Follower(self, thread_id, after, backlog, self._buffer)

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

    def _join(self, follower: Follower) -> None:
        followers = self._followers.get(follower.thread_id)
        if followers is None:
            followers = self._followers[follower.thread_id] = weakref.WeakSet()
        followers.add(follower)

    def _leave(self, follower: Follower) -> None:
        followers = self._followers.get(follower.thread_id)
        if followers is not None:
            followers.discard(follower)


class Follower:
    """An async iterator over one thread's events after a seq (see
    :meth:`EventBus.follow`). ``last`` is the seq of the last event served;
    ``rereads`` counts the times it went back to the log (overflow or gap)."""

    def __init__(
        self, bus: EventBus, thread_id: str, after: int, backlog: Backlog, capacity: int
    ) -> None:
        self.thread_id = thread_id
        self.last = after
        self.rereads = 0
        self._bus = bus
        self._backlog = backlog
        self._capacity = capacity
        self._queue: deque[Event] = deque()
        self._overflowed = False
        self._source: Iterator[Event] | None = None
        self._need = 0
        self._waiter: anyio.Event | None = None
        self._joined = False
        self._closed = False
        self._served = 0

    def push(self, event: Event) -> None:
        """Called by the bus: queue a live event, or overflow."""
        if not self._overflowed:
            if len(self._queue) < self._capacity:
                self._queue.append(event)
            else:
                self._overflowed = True
                self._queue.clear()
        waiter = self._waiter
        if waiter is not None:
            waiter.set()

    def __aiter__(self) -> Follower:
        return self

    async def __anext__(self) -> Event:
        if self._closed:
            raise StopAsyncIteration
        if not self._joined:
            self._joined = True
            self._bus._join(self)
            self._source = self._backlog(self.last)
        while True:
            event = self._next_ready()
            if event is not None:
                self.last = event.seq
                self._served += 1
                if self._served % _YIELD_EVERY:
                    await checkpoint_if_cancelled()
                else:
                    await checkpoint()
                return event
            waiter = self._waiter = anyio.Event()
            try:
                await waiter.wait()
            finally:
                self._waiter = None
            if self._closed:
                raise StopAsyncIteration

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
                self._queue.clear()
                self._reread(0)
                continue
            queue = self._queue
            while queue:
                event = queue.popleft()
                if event.seq <= self.last:
                    continue
                if event.seq == self.last + 1:
                    return event
                self._reread(event.seq)
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
