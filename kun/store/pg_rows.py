"""Reading the PostgreSQL store's rows back: events and side files.

:func:`read_rows` turns a thread's ``events`` rows into events with the
JSONL store's codec, so an unknown kind, an old version to upcast or a bad
line is met exactly as a reader of ``events.jsonl`` meets it, and a
:data:`~kun.store.port.ReadMode` decides the same way. Rows come a page at
a time (keyset paging on ``seq``, no cursor held open between pages), so
memory stays bounded and a slow consumer holds no connection. A row's seq
stands for its line number in messages; a database cannot hold a torn tail
or a repeated seq, so those are never reported.

:class:`PostgresBlobStore` keeps side files in the content-addressed
``blobs`` table, shared by every thread: the same bytes are stored once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import psycopg
from psycopg.rows import TupleRow

from kun.contracts.events import Event
from kun.contracts.items import BlobRef
from kun.store.blobs import BlobMissing, _check_name, _checked, blob_ref
from kun.store.codec import NotJson, UnknownKind, WrongShape, decode_line, preview
from kun.store.errors import CorruptLog, UnknownEventKind
from kun.store.port import ReadMode, ReadReport

__all__ = ["PAGE_ROWS", "Connect", "PostgresBlobStore", "Rows", "read_rows"]

PAGE_ROWS = 256
"""Rows fetched per query while reading."""

Rows = Callable[[int, int], list[tuple[int, bytes]]]
"""``rows(after, count)``: up to ``count`` ``(seq, line)`` rows with
``seq > after``, in order."""

Connect = Callable[[], AbstractContextManager[psycopg.Connection[TupleRow]]]
"""A blocking connection to the store's database, for the length of a block."""


def read_rows(
    rows: Rows,
    thread_id: str,
    where: str,
    *,
    after: int,
    limit: int | None,
    mode: ReadMode,
    report: ReadReport,
) -> Iterator[Event]:
    """The events of the rows after ``after``, at most ``limit`` of them,
    read per ``mode`` into ``report`` (``where`` names the log in errors).
    The caller bounds the rows (``until``) in ``rows``."""
    left = limit
    last = after
    while left is None or left > 0:
        count = PAGE_ROWS if left is None else min(PAGE_ROWS, left)
        page = rows(last, count)
        for seq, line in page:
            report.lines += 1
            if seq != last + 1:
                _gap(where, last, seq, mode, report)
            last = seq
            event = _decode(line, seq, thread_id, where, mode, report)
            if event is None:
                continue
            report.last_seq = seq
            report.events += 1
            yield event
            if left is not None:
                left -= 1
                if left == 0:
                    return
        if len(page) < count:
            return


def _decode(
    line: bytes, seq: int, thread_id: str, where: str, mode: ReadMode, report: ReadReport
) -> Event | None:
    """The row's event, or ``None`` when ``mode`` skips it (counted)."""
    try:
        event = decode_line(line, thread_id)
    except UnknownKind as exc:
        if mode == "strict":
            raise UnknownEventKind(where, seq, report.last_seq, exc.kind) from None
        report.unknown_kinds[exc.kind] = report.unknown_kinds.get(exc.kind, 0) + 1
        return None
    except (NotJson, WrongShape) as exc:
        reason = exc.reason
    else:
        if event.seq == seq:
            return event
        reason = f"the event's seq {event.seq} is not its row's"
    if mode == "skip_bad":
        report.skipped_bad += 1
        return None
    raise CorruptLog(where, seq, report.last_seq, f"{reason}; the line starts {preview(line)!r}")


def _gap(where: str, last: int, seq: int, mode: ReadMode, report: ReadReport) -> None:
    """Seqs ``last + 1 .. seq - 1`` have no row: corrupt in strict mode,
    counted otherwise."""
    missing = seq - last - 1
    if mode == "strict":
        span = f"seq {last + 1}" if missing == 1 else f"seqs {last + 1}..{seq - 1}"
        reason = f"seq jumps from {last} to {seq}: {span} missing"
        raise CorruptLog(where, seq, report.last_seq, reason)
    report.seq_gaps += 1
    report.missing_seqs += missing
    if report.first_gap is None:
        report.first_gap = (last, seq)


class PostgresBlobStore:
    """:class:`kun.store.blobs.BlobStore` over the ``blobs`` table. ``put``
    commits before it returns (durable at the server's
    ``synchronous_commit``); ``get`` checks size and hash as the file store
    does."""

    def __init__(self, connect: Connect, thread_id: str, where: str) -> None:
        self._connect = connect
        self._where = where
        self.thread_id = thread_id

    def where(self, ref: BlobRef) -> str:
        return f"{self._where} blobs/{ref.sha256}"

    def put(self, data: bytes) -> BlobRef:
        ref = blob_ref(data)
        with self._connect() as conn:
            conn.execute(
                "INSERT INTO blobs (sha256, data) VALUES (%s, %s) ON CONFLICT (sha256) DO NOTHING",
                [ref.sha256, bytes(data)],
            )
        return ref

    def get(self, ref: BlobRef) -> bytes:
        _check_name(self, ref)
        with self._connect() as conn:
            row = conn.execute("SELECT data FROM blobs WHERE sha256 = %s", [ref.sha256]).fetchone()
        if row is None:
            raise BlobMissing(self.thread_id, self.where(ref), ref, "missing")
        return _checked(self, ref, bytes(row[0]))
