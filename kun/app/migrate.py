"""``kun migrate``: copy threads from one store to another (the home's
JSONL files to a PostgreSQL database, or back), and prove each copy.

Per thread, with the source held (its writer lock: a live writer makes the
thread ``held``, and nothing writes it while it is copied) and the target
claimed (a live writer there: ``held`` too):

* the target's log is compared with the source's, event by event: absent or
  empty, everything is appended (``copied``); the same events, nothing is
  (``already there``); a prefix of the source's, the rest is appended
  (``continued``); anything else is ``refused`` and left as it is, unless
  ``replace``, when it is removed and the thread copied again (``replaced``);
* the side files the events name are copied before the events, as a writer
  puts a side file before the event naming it;
* then the proof: the projection of the thread (the reduced
  :class:`~kun.domain.state.ThreadState`, usage included) is rebuilt on
  both sides and must be equal, and every side file must read back on the
  target with its size and hash.

A copy that fails anywhere after the target was created or emptied here is
removed (the store's ``discard``), so nothing half-copied remains
(``failed``); a continued one keeps the prefix it had, still a prefix of the
source. Events are copied decoded, as the store's port appends them: an
event of an older version lands in its current shape, which the proof
shows replays the same.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio

from kun.contracts.events import Event
from kun.contracts.items import BlobRef
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState
from kun.errors import KunError
from kun.runtime.sidefiles import side_file_refs
from kun.store.errors import ThreadLocked
from kun.store.jsonl import JsonlEventStore
from kun.store.lock import lock_thread
from kun.store.paths import lock_path
from kun.store.port import EventStore

__all__ = ["BATCH", "Moved", "Outcome", "Tally", "migrate", "migrate_home"]

BATCH = 500
"""Events read and appended at a time."""

Outcome = Literal[
    "copied", "already there", "continued", "replaced", "refused", "held", "failed", "missing"
]
FAILURES: frozenset[Outcome] = frozenset({"refused", "held", "failed", "missing"})


@dataclass(frozen=True)
class Moved:
    """What happened to one thread: ``events`` appended to the target,
    ``side_files`` its side files (all checked on the target), ``why`` the
    reason of a failure, on one line."""

    thread_id: str
    outcome: Outcome
    events: int = 0
    side_files: int = 0
    why: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome not in FAILURES


@dataclass
class Tally:
    """The outcomes counted, for the summary line; ``source`` and
    ``target`` name the stores (a database without its password)."""

    source: str = ""
    target: str = ""
    counts: dict[Outcome, int] = field(default_factory=dict)

    def add(self, moved: Moved) -> None:
        self.counts[moved.outcome] = self.counts.get(moved.outcome, 0) + 1

    @property
    def ok(self) -> bool:
        return not any(self.counts.get(outcome) for outcome in FAILURES)


class _Differs(Exception):
    """The target holds events that are not the source's."""


class _Unproven(Exception):
    """The copy does not replay as the source does."""


async def migrate_home(
    home: Path,
    url: str,
    *,
    back: bool = False,
    threads: Iterable[str] | None = None,
    replace: bool = False,
    said: Callable[[Moved], None] = lambda moved: None,
) -> Tally:
    """Copy the threads of ``home`` to the database at ``url`` (``back``:
    the database's to the home), telling ``said`` of each as it is done."""
    from kun.app.stores import open_store

    async with open_store(home, None) as files, open_store(home, url) as database:
        source, target = (database, files) if back else (files, database)
        tally = Tally(source=_name(source), target=_name(target))
        async for moved in migrate(source, target, threads, replace=replace):
            tally.add(moved)
            said(moved)
    return tally


def _name(store: EventStore) -> str:
    home = getattr(store, "home", None)
    return str(home) if home is not None else str(getattr(store, "where", store))


async def migrate(
    source: EventStore,
    target: EventStore,
    threads: Iterable[str] | None = None,
    *,
    replace: bool = False,
) -> AsyncIterator[Moved]:
    """Copy ``threads`` (default: every thread of ``source``) to ``target``,
    one :class:`Moved` per thread as it is done (see the module docstring).
    Errors that are not one thread's (a database that cannot be reached)
    are raised."""
    names = source.list_threads() if threads is None else list(dict.fromkeys(threads))
    for thread_id in names:
        if not source.exists(thread_id):
            yield Moved(thread_id, "missing", why="no such thread in the source")
            continue
        try:
            async with _held(source, thread_id):
                moved = await _move(source, target, thread_id, replace)
        except ThreadLocked as exc:
            moved = Moved(thread_id, "held", why=_one_line(exc))
        yield moved


@asynccontextmanager
async def _held(store: EventStore, thread_id: str) -> AsyncIterator[None]:
    """The thread's writer lock on the source, for as long as it is copied.
    A home's lock is taken on its own: claiming the log would repair a torn
    tail, writing to what is only read."""
    if isinstance(store, JsonlEventStore):
        fd = lock_thread(thread_id, lock_path(store.home, thread_id))
        try:
            yield
        finally:
            os.close(fd)
        return
    await store.claim(thread_id)
    try:
        yield
    finally:
        await store.release(thread_id)


async def _move(source: EventStore, target: EventStore, thread_id: str, replace: bool) -> Moved:
    existed = target.exists(thread_id)
    last = await target.claim(thread_id)
    created = not existed or last == 0
    outcome: Outcome = "copied" if created else "already there"
    try:
        if not created:
            try:
                await anyio.to_thread.run_sync(_same_prefix, source, target, thread_id, last)
            except _Differs as exc:
                if not replace:
                    return Moved(thread_id, "refused", why=str(exc))
                await _discard(target, thread_id)
                last, created, outcome = await target.claim(thread_id), True, "replaced"
        refs = await anyio.to_thread.run_sync(_side_files, source, target, thread_id)
        appended = await _append_rest(source, target, thread_id, last)
        if appended and outcome == "already there":
            outcome = "continued"
        await anyio.to_thread.run_sync(_prove, source, target, thread_id, refs)
    except (KunError, OSError, _Unproven) as exc:
        if created:
            await _discard(target, thread_id)
        return Moved(thread_id, "failed", why=_one_line(exc))
    finally:
        await target.release(thread_id)
    return Moved(thread_id, outcome, events=appended, side_files=len(refs))


def _side_files(source: EventStore, target: EventStore, thread_id: str) -> list[BlobRef]:
    """Every side file the source's events name, each put on the target."""
    refs: dict[str, BlobRef] = {}
    for event in source.read(thread_id):
        refs.update((ref.sha256, ref) for ref in side_file_refs(event))
    have, put = source.blobs(thread_id), target.blobs(thread_id)
    for ref in refs.values():
        put.put(have.get(ref))
    return list(refs.values())


def _same_prefix(source: EventStore, target: EventStore, thread_id: str, last: int) -> None:
    """The target's ``last`` events are the source's first ones, or
    :class:`_Differs` saying where they part."""
    theirs = source.read(thread_id, until=last)
    try:
        for mine in target.read(thread_id, until=last):
            other = next(theirs, None)
            if other is None:
                raise _Differs(f"the target has more events than the source ({last})")
            if other != mine:
                raise _Differs(f"the target's event {mine.seq} is not the source's")
    except (KunError, OSError) as exc:
        raise _Differs(f"the target's log cannot be read: {_one_line(exc)}") from None


async def _append_rest(source: EventStore, target: EventStore, thread_id: str, last: int) -> int:
    """Append the source's events after ``last``; how many. Batches go
    in without an fsync each, and are made durable once, at the end."""
    appended = 0
    while True:
        batch = await anyio.to_thread.run_sync(_page, source, thread_id, last)
        if not batch:
            break
        last = await target.append(thread_id, batch, expected_seq=last, durable=False)
        appended += len(batch)
    await target.sync(thread_id)
    return appended


def _page(store: EventStore, thread_id: str, after: int) -> list[Event]:
    return list(store.read(thread_id, after=after, limit=BATCH))


def _prove(source: EventStore, target: EventStore, thread_id: str, refs: list[BlobRef]) -> None:
    """The thread replays the same on both sides and its side files read
    back whole on the target; :class:`_Unproven` otherwise."""
    if _projection(source.read(thread_id)) != _projection(target.read(thread_id)):
        raise _Unproven("the copy does not replay as the source does")
    blobs = target.blobs(thread_id)
    for ref in refs:
        blobs.get(ref)


def _projection(events: Iterator[Event]) -> ThreadState:
    projector = Projector()
    projector.apply_all(events)
    return projector.snapshot()


async def _discard(store: EventStore, thread_id: str) -> None:
    """Remove the thread from ``store`` (a store without ``discard`` keeps it)."""
    discard = getattr(store, "discard", None)
    if discard is not None:
        await store.release(thread_id)
        await discard(thread_id)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
