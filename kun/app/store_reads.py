"""What the in-process adapter reads when its threads are in a database
(:mod:`kun.app.stores`) rather than a home's files: the thread list, and a
thread's log as a file.

The list is the store's own (``list_threads``: the ``threads`` table), each
thread summarized from its projection, replayed tolerantly as ``kun
threads`` replays a home's (a home keeps a cache of summaries,
:mod:`kun.app.thread_index`; a database is read whole each time).

The readers written for files (replay, usage, export) read a thread's log
copied into a scratch home (:func:`spool`): its lines as the database
holds them, undecoded, so a thread prints byte for byte what it prints
from a home, kinds this kun does not know included; and, for an export,
the side files its events name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kun.app.listing import ThreadSummary, summary_of
from kun.domain.reduce import Projector
from kun.errors import KunError
from kun.runtime.sidefiles import side_file_refs
from kun.store.blobs import FileBlobStore
from kun.store.codec import encode_line
from kun.store.paths import blobs_dir, log_path
from kun.store.port import EventStore

__all__ = ["log_lines", "spool", "store_summaries"]


def store_summaries(store: EventStore, *, include_hidden: bool) -> list[ThreadSummary]:
    """Every thread of ``store``, newest activity first (side threads only
    with ``include_hidden``; one that cannot be replayed, with its error)."""
    found: list[ThreadSummary] = []
    for thread_id in store.list_threads():
        projector = Projector()
        try:
            projector.apply_all(store.read(thread_id, mode="tolerant"))
        except (KunError, ValueError) as exc:
            found.append(ThreadSummary(thread_id=thread_id, error=str(exc)))
            continue
        summary = summary_of(thread_id, projector.snapshot())
        if include_hidden or not summary.hidden:
            found.append(summary)
    found.sort(key=lambda s: (s.updated_at, s.thread_id), reverse=True)
    return found


def log_lines(store: EventStore, thread_id: str) -> Iterator[bytes]:
    """The thread's log as the lines of its ``events.jsonl``: undecoded
    where the store can hand them out so (``lines``), else re-encoded."""
    lines = getattr(store, "lines", None)
    if lines is not None:
        yield from lines(thread_id)
        return
    for event in store.read(thread_id):
        yield encode_line(event)


def spool(store: EventStore, thread_ids: list[str], home: Path, *, side_files: bool) -> None:
    """Write the logs of ``thread_ids`` (with ``side_files``, the side
    files their events name) into ``home``, as a home holds them."""
    for thread_id in thread_ids:
        path = log_path(home, thread_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as log:
            log.writelines(log_lines(store, thread_id))
        if side_files:
            have = store.blobs(thread_id)
            put = FileBlobStore(blobs_dir(home, thread_id), thread_id)
            refs = {
                r.sha256: r
                for e in store.read(thread_id, mode="tolerant")
                for r in side_file_refs(e)
            }
            for ref in refs.values():
                put.put(have.get(ref))
