"""The event recorder: numbers, validates, persists, then publishes events.

:meth:`EventRecorder.record` gives drafts ``seq`` = last + 1, + 2, ...,
``at`` = the clock, ``thread_id`` (building each event once with
``msgspec.structs.replace``: a draft is never changed, so a caller may reuse
one); validates them on the thread's live
:class:`~kun.domain.reduce.Projector` (a ``ProjectionError`` rejects the whole
batch: nothing written, projection unchanged); appends them with
``expected_seq`` (durable per the store's rules); then publishes them to
followers (:mod:`kun.runtime.bus`).

Validate on the live projector, rebuild on failure. Checking each batch on a
copy first costs ``snapshot()`` plus a ``Projector`` built from it, O(items in
the thread), on every write: measured per one-delta write, 21 us at 100
items, 164 us at 1,000, 1-2.4 ms at 10,000, against 0.6 us for the live apply
at any size. Failures are bugs, so they pay instead: ``Projector.apply``
checks an event before changing anything, so a batch rejected at its first
event leaves it untouched; a later rejection, or a failed append (the log may
then hold a prefix of the batch), rebuilds the projection from the log, and
the thread is re-claimed before its next write. The visible cost: while an
append awaits, :meth:`~EventRecorder.state` already shows the batch (never
with the JSONL store, whose append does not await).

Deltas are coalesced (:mod:`kun.runtime.coalesce`) and written when their
buffer closes: a fragment of another stream, the size limit (``coalesce_bytes``,
4 KB), ``log_window_ms`` (1 s) after its first fragment (a timer in the
recorder's task group), any non-delta event on the thread (written first, so
order is kept), ``flush()``, or exit. Live followers do not wait for that:
every ``live_window_ms`` (30 ms) the fragments not shown yet are published as
a preview (:meth:`kun.runtime.bus.EventBus.preview`, not persisted), and a
buffer's last fragments are previewed just before it is written, so a written
delta is exactly its previews (the bus's invariant). Crash loss: a process
that dies loses the text buffered for the log, at most ``log_window_ms`` or
``coalesce_bytes`` of the one item streaming at that moment (the previews a
viewer saw are not in the log); everything before it, and every non-delta
event, is written as before.
``item_completed`` of a text or reasoning item whose text is what its deltas
built is recorded with ``text_from_deltas`` instead of the text
(:func:`kun.runtime.coalesce.compact_completions`); events returned, published
and logged are the same.
Validation stays synchronous: a stream's first delta is buffered like the
rest, but checked first (``Projector.check_delta``, and against the pending
buffer, whose item the projection does not know yet), so an invalid one
(unknown turn, an item of another type) fails the call that made it and is
not buffered. Once a stream's first delta passes, the reducer accepts every
later one (an item cannot change type; a settled turn counts late events, it
does not reject them), so a buffered fragment cannot turn into a rejected
write. The first delta is previewed at once, so a live follower sees an
item's first token without waiting; a durable-only follower (``live=False``)
gets it when the buffer is written, at most ``log_window_ms`` later.
If a timer's write fails, the error is kept and raised by the thread's next
``record`` or ``flush``, or on exit, as buffered file writes do. A
``log_window_ms`` of 0 turns coalescing off: each delta is written by the call
that made it, with no preview (nothing waits to be shown).

Writes to one thread are serialized by a per-thread :class:`_Mutex` (the
timer writes too) that costs a flag flip when nobody else holds it: an
``anyio.Lock`` acquire and release cost ~9 us, more than a delta's whole
write; ``record`` takes it inline, without the two coroutines of
``async with``. The clock is :func:`kun.runtime.clock.now_ms` (one
``time.time_ns``), never ``anyio.current_time()``. The recorder never closes
the store.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Self

import anyio
import msgspec
from anyio.abc import TaskGroup

from kun.contracts.events import Event, ItemCompleted, ThreadCreated, TurnStarted
from kun.domain.errors import ProjectionError
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState
from kun.runtime.bus import EventBus, Follower
from kun.runtime.clock import now_ms
from kun.runtime.coalesce import (
    Coalescer,
    Delta,
    DeltaBuffer,
    FlushTimers,
    StreamKey,
    compact_completions,
    is_delta,
    merge_run,
    stream_key,
)
from kun.runtime.errors import RecorderNotRunning, ThreadExists, ThreadNotOpen
from kun.store.errors import ThreadNotFound
from kun.store.paths import log_path
from kun.store.port import ChangeSource, EventStore, ReadReport
from kun.store.snapshot import SNAPSHOT_AFTER, snapshot_path, snapshots_of, write_snapshot

__all__ = ["EventRecorder", "RecorderNotRunning", "ThreadExists", "ThreadNotOpen"]

_log = logging.getLogger(__name__)
_replace = msgspec.structs.replace
_SHIELD_SECONDS = 10.0
_MAX_STREAMS = 256
SNAPSHOT_EVERY = 50_000
"""Events an open thread grows by between two snapshots written in the
background, so a process that never exits cleanly still leaves one."""
"""Accepted streams remembered per thread; forgetting one only costs an
unbuffered first fragment."""
WATCH_SECONDS = 0.25
"""How often a followed thread written by another process is looked at: a
follower here sees that process's events this late at most."""

RELAY_RETRY_SECONDS = 1.0
"""How long a lost change feed waits before it is opened again."""


class _Mutex:
    """A task mutex that touches anyio only when contended.

    Uncontended, entering and leaving flip ``busy`` (no await, no
    checkpoint, like ``anyio.Lock(fast_acquire=True)``). A task that finds it
    busy waits on ``idle``, an event the holder sets on leaving; woken
    waiters race for the flag again, so a waiter cancelled while waiting
    leaves nothing behind to hand over. Not FIFO: nothing here needs order
    among waiters (each re-checks what it came to do once inside).
    """

    __slots__ = ("busy", "idle")

    def __init__(self) -> None:
        self.busy = False
        self.idle: anyio.Event | None = None

    def locked(self) -> bool:
        return self.busy

    async def __aenter__(self) -> None:
        if self.busy:
            await self.wait()
        self.busy = True

    async def __aexit__(self, *exc_info: object) -> None:
        self.release()

    async def wait(self) -> None:
        """Return once nobody holds the mutex (the caller then takes it
        before its next await)."""
        while self.busy:
            idle = self.idle
            if idle is None:
                idle = self.idle = anyio.Event()
            await idle.wait()

    def release(self) -> None:
        self.busy = False
        idle, self.idle = self.idle, None
        if idle is not None:
            idle.set()


class _Thread:
    """One open thread: its projection, last seq, lock and delta buffer."""

    __slots__ = (
        "claimed",
        "coalescer",
        "error",
        "id",
        "last_seq",
        "lock",
        "projector",
        "snapshot_seq",
        "snapshotting",
        "stale",
        "streams",
    )

    def __init__(self, thread_id: str, projector: Projector, last_seq: int, coalescer: Coalescer):
        self.id = thread_id
        self.projector = projector
        self.last_seq = last_seq
        self.lock = _Mutex()
        self.coalescer = coalescer
        self.streams: set[StreamKey] = set()
        self.error: Exception | None = None
        self.stale = False
        self.snapshot_seq = last_seq
        self.snapshotting = False
        self.claimed = True

    def raise_deferred(self) -> None:
        error, self.error = self.error, None
        if error is not None:
            raise error


class EventRecorder:
    """The only path from events to a thread's log (see the module docstring).

    ``store`` and ``clock`` are public so the writer's collaborators read the
    same log and time; ``bus`` carries the live events.
    """

    def __init__(
        self,
        store: EventStore,
        *,
        clock: Callable[[], int] = now_ms,
        log_window_ms: float = 1000.0,
        live_window_ms: float = 30.0,
        coalesce_bytes: int = 4096,
        coalesce_ms: float | None = None,
        snapshot_after: int = SNAPSHOT_AFTER,
        snapshot_every: int = SNAPSHOT_EVERY,
        watch_seconds: float = WATCH_SECONDS,
    ) -> None:
        """``watch_seconds``: how often the followed threads this recorder
        does not write are checked for events another process appended
        (0: never)."""
        self.store = store
        self._watch_seconds = watch_seconds
        self._snapshots = snapshots_of(store)
        self._snapshot_after = snapshot_after
        self._snapshot_every = snapshot_every
        self.clock = clock
        self.bus = EventBus()
        if coalesce_ms is not None:
            log_window_ms, live_window_ms = coalesce_ms, min(live_window_ms, coalesce_ms)
        self._window_ms = log_window_ms
        self._live_ms = live_window_ms
        self._max_bytes = coalesce_bytes
        self._threads: dict[str, _Thread] = {}
        self._tg: TaskGroup | None = None
        self._buffering = False
        self._timers = FlushTimers(log_window_ms, self._flush_due)
        self._live_timers = FlushTimers(live_window_ms, self._preview_due)

    # -- lifecycle -------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Start the task group that owns the coalescing timers."""
        if self._tg is not None:
            raise RuntimeError("the recorder is already running")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        self._buffering = self._window_ms > 0
        tg.start_soon(self._timers.run)
        tg.start_soon(self._live_timers.run)
        if self._watch_seconds > 0:
            tg.start_soon(self._watch_others)
        if isinstance(self.store, ChangeSource):
            tg.start_soon(self._relay_changes, self.store)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Write every buffered delta and sync every open thread (shielded,
        bounded), then stop the timers. The store stays open. A write error
        met here is raised unless another exception is already on its way."""
        tg = self._tg
        assert tg is not None, "__aexit__ without __aenter__"
        self._buffering = False
        failure: Exception | None = None
        try:
            with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
                failure = await self._flush_all()
        finally:
            self._tg = None
            tg.cancel_scope.cancel()
            await tg.__aexit__(exc_type, exc, tb)
        if failure is not None and exc is None:
            raise failure
        if failure is None and exc is None:
            self._save_snapshots()

    def _save_snapshots(self) -> None:
        """At a clean exit, snapshot each open thread past the threshold, so
        its next open folds only what follows (see :mod:`kun.store.snapshot`:
        a snapshot that does not match the log is simply not written)."""
        snapshots = self._snapshots
        if snapshots is None:
            return
        for thread in self._threads.values():
            if thread.last_seq >= self._snapshot_after and not thread.stale:
                snapshots.save(thread.projector.snapshot())

    async def _flush_all(self) -> Exception | None:
        failure: Exception | None = None
        for thread in list(self._threads.values()):
            try:
                async with thread.lock:
                    await self._write_pending(thread)
                await self.store.sync(thread.id)
            except Exception as exc:
                failure = failure or exc
            failure, thread.error = failure or thread.error, None
        return failure

    # -- threads ---------------------------------------------------------------

    async def open(self, thread_id: str) -> ThreadState:
        """Become the writer of an existing thread and return its state.

        Claims it (``ThreadLocked`` if another writer has it; a torn tail is
        repaired, adding a ``log_repaired`` event) and replays the log in
        strict mode (``CorruptLog``, ``UnknownEventKind``, ``ProjectionError``
        propagate); a thread known here but released first takes in what
        other processes appended since (:meth:`release`). ``ThreadNotFound``
        for a thread with no log. Idempotent.
        """
        thread = self._threads.get(thread_id)
        if thread is None or not thread.claimed:
            if thread is None and not self.store.exists(thread_id):
                raise ThreadNotFound(thread_id)
            await self.store.claim(thread_id)
            thread = self._threads.get(thread_id)
            if thread is None:
                projector, last_seq = self._replay(thread_id)
                thread = _Thread(thread_id, projector, last_seq, self._coalescer())
                self._threads[thread_id] = thread
            elif not thread.claimed:
                async with thread.lock:
                    if not thread.claimed:
                        await self._claim(thread)
        return thread.projector.snapshot()

    async def view(self, thread_id: str) -> ThreadState:
        """The thread's state as its log holds it now, without becoming its
        writer: a reader (``GET`` of the server, a listing) never takes the
        lock another process may need. A thread written here is its live
        projection; one this process does not write is replayed once and then
        brought up to date with the events others appended since, which are
        also published to its followers here (so a stream served here shows
        a turn another process runs). ``ThreadNotFound`` for no log."""
        thread = self._threads.get(thread_id)
        if thread is None:
            if not self.store.exists(thread_id):
                raise ThreadNotFound(thread_id)
            projector, last_seq = self._replay(thread_id)
            thread = self._threads.get(thread_id)
            if thread is None:
                thread = _Thread(thread_id, projector, last_seq, self._coalescer())
                thread.claimed = False
                self._threads[thread_id] = thread
        elif not thread.claimed and not thread.lock.busy:
            last = await self.store.last_seq(thread_id)
            if last != thread.last_seq:
                async with thread.lock:
                    if not thread.claimed:
                        self._follow_log(thread, last)
        return thread.projector.snapshot()

    async def release(self, thread_id: str) -> None:
        """Stop writing the thread for now: write its buffered deltas, make
        the log durable and release the store's lock (its fds closed), so
        another process may write it. Its projection stays here for reads;
        the next write (or :meth:`open`) claims it again and first takes in
        what others appended meanwhile. Nothing to do for a thread not
        claimed here."""
        thread = self._threads.get(thread_id)
        if thread is None or not thread.claimed:
            return
        async with thread.lock:
            if not thread.claimed or self._threads.get(thread_id) is not thread:
                return
            try:
                await self._write_pending(thread)
                thread.raise_deferred()
            finally:
                thread.claimed = False
                await self.store.release(thread_id)

    def claimed(self, thread_id: str) -> bool:
        """Whether this recorder is the thread's writer now."""
        thread = self._threads.get(thread_id)
        return thread is not None and thread.claimed

    async def _claim(self, thread: _Thread) -> None:
        """Under the thread's lock: become its writer again and take in what
        the log gained while it was released."""
        last = await self.store.claim(thread.id)
        thread.claimed = True
        self._follow_log(thread, last)

    def _follow_log(self, thread: _Thread, last: int) -> None:
        """Apply and publish the events another process appended after the
        projection's last seq, up to ``last``, the log's (a log that does
        not continue the projection is replayed whole instead)."""
        if last == thread.last_seq:
            return
        thread.streams.clear()
        if last < thread.last_seq:
            self._rebuild(thread)
            return
        try:
            events = list(self.store.read(thread.id, after=thread.last_seq, mode="strict"))
            if events and events[0].seq != thread.last_seq + 1:
                raise ProjectionError(events[0].seq, "the log does not continue the projection")
            thread.projector.apply_all(events)
        except ProjectionError:
            self._rebuild(thread)
            return
        if events:
            thread.last_seq = events[-1].seq
        publish = self.bus.publish
        for event in events:
            publish(event)

    def is_open(self, thread_id: str) -> bool:
        return thread_id in self._threads

    def state(self, thread_id: str) -> ThreadState:
        """The thread's live projection, an immutable snapshot. Buffered
        deltas are not in it yet. ``ThreadNotOpen`` if the thread is not open."""
        thread = self._threads.get(thread_id)
        if thread is None:
            raise ThreadNotOpen(thread_id, "read its state")
        return thread.projector.snapshot()

    def subscribe(self, thread_id: str, *, after: int = 0, live: bool = False) -> Follower:
        """Every event of the thread with ``seq > after``, backlog then live
        (see :meth:`kun.runtime.bus.EventBus.follow`), and with ``live`` the
        previews of buffered deltas too (a view that draws text as it comes;
        :class:`kun.runtime.bus.LiveText` shows each character once). Works
        for any thread in the store, open here or not; a thread with no log
        yet starts empty."""

        def backlog(after: int) -> Iterator[Event]:
            if not self.store.exists(thread_id):
                return iter(())
            return self.store.read(thread_id, after=after)

        def catch_up() -> tuple[Delta, int] | None:
            thread = self._threads.get(thread_id)
            buffer = thread.coalescer.pending if thread is not None else None
            if thread is None or buffer is None:
                return None
            delta = buffer.previewed(thread_id=thread_id)
            return None if delta is None else (delta, thread.last_seq)

        return self.bus.follow(
            thread_id, after=after, backlog=backlog, live=live, catch_up=catch_up
        )

    # -- writing ---------------------------------------------------------------

    async def record(self, thread_id: str, *events: Event, durable: bool = True) -> list[Event]:
        """Number, validate, persist and publish ``events`` (drafts: their
        ``seq``, ``at`` and ``thread_id`` are replaced).

        ``durable=False`` lets the store return before the batch is durable
        (see :meth:`kun.store.port.EventStore.append`): the caller must make
        a durable write before anything depends on it.

        A thread not open here must start with ``ThreadCreated``
        (``ThreadNotOpen`` otherwise; ``ThreadExists`` if it already has
        events). Returns the events this call wrote for its drafts, in order:
        every non-delta draft, one for one; a delta only once its buffer is
        written (merged, possibly with fragments of earlier calls). A
        buffered delta is not returned by a later call that only flushes it.
        Raises ``ProjectionError`` (nothing written), the store's errors
        (the projection is rebuilt from the log), an error kept from a
        background flush of this thread, or ``RecorderNotRunning``.
        """
        if self._tg is None:
            raise RecorderNotRunning()
        if not events:
            return []
        while True:
            thread = self._threads.get(thread_id)
            if thread is None:
                thread = await self._begin(thread_id, events[0])
            # ``async with thread.lock``, without its two coroutines per call.
            lock = thread.lock
            if lock.busy:
                await lock.wait()
            lock.busy = True
            try:
                if self._threads.get(thread_id) is not thread:
                    continue
                if not thread.claimed:
                    await self._claim(thread)
                return await self._record(thread, events, durable)
            finally:
                if thread.last_seq == 0 and self._threads.get(thread_id) is thread:
                    del self._threads[thread_id]
                lock.release()

    async def flush(self, thread_id: str) -> None:
        """Write the thread's buffered delta now (and raise an error kept
        from a background flush). Nothing to do for a thread not open."""
        thread = self._threads.get(thread_id)
        if thread is None:
            return
        async with thread.lock:
            await self._write_pending(thread)
            thread.raise_deferred()

    async def _begin(self, thread_id: str, first: Event) -> _Thread:
        """Register a new thread whose first event is ``first``."""
        if type(first) is not ThreadCreated:
            raise ThreadNotOpen(thread_id, f"record {type(first).__name__}")
        last_seq = await self.store.last_seq(thread_id)
        if last_seq:
            raise ThreadExists(thread_id, last_seq)
        thread = self._threads.get(thread_id)
        if thread is None:
            thread = _Thread(thread_id, Projector(), 0, self._coalescer())
            self._threads[thread_id] = thread
        return thread

    async def _record(
        self, thread: _Thread, drafts: Sequence[Event], durable: bool = True
    ) -> list[Event]:
        if thread.error is not None:
            thread.raise_deferred()
        now = self.clock()
        streams = thread.streams
        if self._buffering:
            if all(is_delta(d) and stream_key(d) in streams for d in drafts):
                return await self._buffer(thread, drafts, now)
            if len(drafts) == 1 and is_delta(first := drafts[0]):
                return await self._first(thread, first, now)
        if thread.coalescer.pending is not None:
            await self._write_pending(thread)
        if len(drafts) > 1:
            batch = merge_run(drafts, self._max_bytes)
            batch = compact_completions(batch, thread.projector.streamed_text)
        elif type(drafts[0]) is ItemCompleted:
            batch = compact_completions(list(drafts), thread.projector.streamed_text)
        else:
            batch = list(drafts)
        if thread.stale:
            await self._reclaim(thread)
        written = await self._commit(thread, self._stamp(thread, batch, now), durable)
        if self._buffering:
            for event in written:
                if type(event) is TurnStarted or len(streams) >= _MAX_STREAMS:
                    streams.clear()
                if is_delta(event):
                    streams.add(stream_key(event))
        return written

    async def _first(self, thread: _Thread, delta: Delta, now: int) -> list[Event]:
        """A stream's first fragment: checked now against the projection and
        the pending buffer (a bad one fails this call, nothing buffered),
        then buffered like the rest, and previewed at once."""
        seq = thread.last_seq + 1
        pending = thread.coalescer.pending
        if pending is not None:
            first = pending.first
            if (
                first.item_id == delta.item_id
                and first.turn_id == delta.turn_id
                and type(first) is not type(delta)
            ):
                raise ProjectionError(
                    seq,
                    f"{type(delta).__name__} for item {delta.item_id!r} streaming "
                    f"{type(first).__name__}",
                )
        thread.projector.check_delta(delta, seq)
        streams = thread.streams
        if len(streams) >= _MAX_STREAMS:
            streams.clear()
        streams.add(stream_key(delta))
        written = await self._buffer(thread, [delta], now)
        pending = thread.coalescer.pending
        if pending is not None and pending.unshown:
            self._preview(thread, pending)
        return written

    async def _buffer(self, thread: _Thread, deltas: Sequence[Event], now: int) -> list[Event]:
        """Offer fragments of accepted streams to the coalescer; write what
        it closes; start the timer of a buffer it opens."""
        coalescer = thread.coalescer
        before = coalescer.pending
        if before is not None and before.unshown and now - before.live_at >= self._live_ms:
            self._preview(thread, before)
        token = object()
        closed: list[DeltaBuffer] = []
        for delta in deltas:
            closed += coalescer.offer(delta, now, token)  # type: ignore[arg-type]
        pending = coalescer.pending
        if pending is not None:
            if pending is not before:
                self._timers.schedule(thread, pending)
            if pending.unshown and pending.timed != pending.live_at:
                pending.timed = pending.live_at
                self._live_timers.schedule(thread, pending)
        written: list[Event] = []
        for buffer in closed:
            written += await self._write_buffer(thread, buffer)
        return [
            event for event, buffer in zip(written, closed, strict=True) if buffer.token is token
        ]

    async def _write_pending(self, thread: _Thread) -> None:
        buffer = thread.coalescer.take()
        if buffer is not None:
            await self._write_buffer(thread, buffer)

    def _preview(self, thread: _Thread, buffer: DeltaBuffer) -> None:
        first = buffer.shown == 0
        delta = buffer.preview(thread_id=thread.id)
        if delta is not None:
            self.bus.preview(delta, thread.last_seq, first=first)

    async def _write_buffer(self, thread: _Thread, buffer: DeltaBuffer) -> list[Event]:
        """Write ``buffer`` as one event, its last fragments previewed first
        (so the event's text is exactly its previews)."""
        self._preview(thread, buffer)
        if thread.stale:
            await self._reclaim(thread)
        merged = buffer.merged(seq=thread.last_seq + 1, thread_id=thread.id)
        return await self._commit(thread, [merged])

    @staticmethod
    def _stamp(thread: _Thread, drafts: list[Event], at: int) -> list[Event]:
        """``drafts`` numbered after the thread's last seq, at ``at``.

        Each event is built once, by one ``msgspec.structs.replace`` (a
        single C call, ~0.1 us; setting the three fields in place with
        ``force_setattr`` costs more). A draft is never changed, so a caller
        may hand the same draft to several calls."""
        thread_id = thread.id
        last = thread.last_seq
        if len(drafts) == 1:
            return [_replace(drafts[0], seq=last + 1, at=at, thread_id=thread_id)]
        return [
            _replace(d, seq=last + i, at=at, thread_id=thread_id) for i, d in enumerate(drafts, 1)
        ]

    async def _commit(
        self, thread: _Thread, events: list[Event], durable: bool = True
    ) -> list[Event]:
        """Validate stamped ``events`` on the projector (a ``ProjectionError``
        leaves nothing written), append (persist before publish), publish."""
        thread_id = thread.id
        last = thread.last_seq
        try:
            thread.projector.apply_all(events)
        except ProjectionError as exc:
            if exc.seq != events[0].seq:
                self._rebuild(thread)
            raise
        try:
            if durable:
                await self.store.append(thread_id, events, expected_seq=last)
            else:
                await self.store.append(thread_id, events, expected_seq=last, durable=False)
        except BaseException:
            thread.stale = True
            self._rebuild(thread)
            raise
        thread.last_seq = events[-1].seq
        if thread.last_seq - thread.snapshot_seq >= self._snapshot_every:
            self._snapshot_soon(thread)
        publish = self.bus.publish
        for event in events:
            publish(event)
        return events

    def _snapshot_soon(self, thread: _Thread) -> None:
        """Snapshot ``thread`` as it is now in a worker thread (one at a time
        per thread). The log's size, read before any other write, is where
        the state's last line ends; ``write_snapshot`` checks that line and
        writes nothing if it is not the state's last event."""
        snapshots, tg = self._snapshots, self._tg
        if snapshots is None or tg is None or thread.snapshotting or thread.stale:
            return
        log = log_path(snapshots.home, thread.id)
        try:
            offset = os.stat(log).st_size
        except OSError:
            return
        state = thread.projector.snapshot()
        thread.snapshot_seq = state.last_seq
        thread.snapshotting = True

        async def save() -> None:
            try:
                path = snapshot_path(snapshots.home, thread.id)
                await anyio.to_thread.run_sync(write_snapshot, path, log, state, offset)
            finally:
                thread.snapshotting = False

        tg.start_soon(save)

    # -- recovery --------------------------------------------------------------

    def _replay(self, thread_id: str) -> tuple[Projector, int]:
        if self._snapshots is not None:
            resumed = self._snapshots.resume(thread_id)
            if resumed is not None:
                return resumed, resumed.last_seq
        projector = Projector()
        report = ReadReport()
        try:
            projector.apply_all(self.store.read(thread_id, mode="strict", report=report))
        except ThreadNotFound:
            return Projector(), 0
        return projector, report.last_seq

    def _rebuild(self, thread: _Thread) -> bool:
        """Make the projection what the log holds (after a partial apply or
        a failed append). Never raises, so the error that led here is the one
        that propagates: if even the log cannot be read, the thread is closed
        here (``open()`` it again), so no stale projection is handed out."""
        thread.streams.clear()
        try:
            thread.projector, thread.last_seq = self._replay(thread.id)
        except Exception:
            _log.exception("thread %s: cannot rebuild the projection; closing it", thread.id)
            thread.last_seq = 0
            if self._threads.get(thread.id) is thread:
                del self._threads[thread.id]
            return False
        return True

    async def _reclaim(self, thread: _Thread) -> None:
        """After a failed append: claim the thread again (a store may repair
        what the failure left, which moves the last seq) and rebuild."""
        await self.store.claim(thread.id)
        if not self._rebuild(thread):
            raise ThreadNotOpen(thread.id, "write: its log could not be read again")
        thread.stale = False

    async def _watch_others(self) -> None:
        """Followers of a thread another process writes get its events:
        nothing is published here for them, so every ``watch_seconds`` such
        a thread's last seq is read (a small read at the log's end) and the
        followers behind it sent back to the log."""
        while True:
            await anyio.sleep(self._watch_seconds)
            await self._nudge_others()

    async def _nudge_others(self) -> None:
        """Send the followers of each thread another process writes back to
        the log if they are behind its end."""
        for thread_id in self.bus.followed():
            if self.claimed(thread_id):
                continue
            try:
                last = await self.store.last_seq(thread_id)
            except Exception as exc:
                _log.debug("thread %s: not watched: %s", thread_id, exc)
                continue
            self.bus.nudge(thread_id, last)

    async def _relay_changes(self, source: ChangeSource) -> None:
        """Followers of a thread another worker writes wake as that worker
        commits: each change the store reports sends them back to the log
        (the look every ``watch_seconds`` stays, for a notification lost
        with a connection). A feed that ends is opened again."""
        while True:
            try:
                async with await source.changes() as feed:
                    await self._nudge_others()  # what was committed while no feed listened
                    async for changed in feed:
                        if not self.claimed(changed.thread_id):
                            self.bus.nudge(changed.thread_id, changed.last_seq)
            except Exception as exc:
                _log.warning("the store's change feed failed (%s); opening it again", exc)
            await anyio.sleep(RELAY_RETRY_SECONDS)

    # -- timers ----------------------------------------------------------------

    def _coalescer(self) -> Coalescer:
        return Coalescer(self._window_ms, self._max_bytes)

    async def _preview_due(self, thread: _Thread, buffer: DeltaBuffer) -> None:
        """``live_window_ms`` after fragments of ``buffer`` began to wait for
        a preview: publish them, if the buffer is still pending."""
        if thread.coalescer.pending is not buffer or not buffer.unshown:
            return
        async with thread.lock:
            if thread.coalescer.pending is buffer:
                self._preview(thread, buffer)

    async def _flush_due(self, thread: _Thread, buffer: DeltaBuffer) -> None:
        """The timer of ``buffer`` expired: write it, if it is still pending.
        An error is kept for the thread's next call, not raised here (it
        would tear down the recorder's task group)."""
        if thread.coalescer.pending is not buffer:
            return
        async with thread.lock:
            if thread.coalescer.pending is not buffer:
                return
            try:
                await self._write_pending(thread)
            except Exception as exc:
                _log.warning("thread %s: buffered delta not written: %s", thread.id, exc)
                thread.error = thread.error or exc
