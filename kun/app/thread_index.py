"""A per-home cache of thread summaries, so listing threads costs one
``stat`` per thread instead of a replay of every log.

``<home>/index.json`` maps each thread id to its :class:`ThreadSummary` and
the key of the log it was computed from: size, ``mtime_ns``, ``ctime_ns``
and inode. A reader trusts an entry only while the log's key is unchanged;
any other entry (new thread, appended log, replaced file) is rebuilt from
the log, and entries of threads that are gone are dropped. The log is
stat'ed *before* it is replayed, so an append racing the replay leaves a key
older than the summary and the entry is simply re-read next time.

The index is a cache, never a source of truth: a missing, unreadable or
foreign file (another format, another summary shape) is treated as empty
and rewritten. It is rewritten whole through a temp file and
``os.replace``, so concurrent listers never see a torn file; the last
writer wins, which is harmless because every entry is re-verified against
its log. It is not fsynced: after a power loss it is at worst rebuilt.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from kun import __version__
from kun.app.listing import ThreadSummary
from kun.contracts.usage import UsageTotals
from kun.store.errors import InvalidThreadId
from kun.store.paths import LOG_NAME, threads_root, validate_thread_id

__all__ = ["INDEX_NAME", "index_path", "indexed_summaries"]

INDEX_NAME = "index.json"
# Bump when what a summary means changes without its fields changing.
FORMAT = 1

LogKey = tuple[int, int, int, int]


class Entry(msgspec.Struct, frozen=True, array_like=True, gc=False):
    key: LogKey
    summary: ThreadSummary


class IndexFile(msgspec.Struct, kw_only=True):
    shape: str
    entries: dict[str, Entry] = {}


def _shape() -> str:
    """What an index must have been written by to be read: a stale kun, or a
    summary that gained a field, makes the whole file a miss."""
    fields = ",".join(ThreadSummary.__struct_fields__ + UsageTotals.__struct_fields__)
    return f"{FORMAT}/{__version__}/{fields}"


SHAPE = _shape()
_decoder = msgspec.json.Decoder(IndexFile)
_encoder = msgspec.json.Encoder()


def index_path(home: Path) -> Path:
    return home / INDEX_NAME


def indexed_summaries(
    home: Path, summarize: Callable[[Path, str], ThreadSummary]
) -> list[ThreadSummary]:
    """Every thread's summary (unordered), from the index where its log is
    unchanged and from ``summarize`` elsewhere; the index is rewritten when
    anything differed."""
    old = _load(home)
    fresh: dict[str, Entry] = {}
    rebuilt = False
    for thread_id, key in _logs(home):
        entry = old.get(thread_id)
        if entry is None or entry.key != key:
            entry = Entry(key=key, summary=summarize(home, thread_id))
            rebuilt = True
        fresh[thread_id] = entry
    if rebuilt or len(fresh) != len(old):
        _save(home, fresh)
    return [entry.summary for entry in fresh.values()]


def _logs(home: Path) -> Iterator[tuple[str, LogKey]]:
    """Each thread with a log, and that log's key (one ``stat``)."""
    try:
        found = os.scandir(threads_root(home))
    except OSError:
        return
    with found:
        for child in found:
            if not _valid(child.name):
                continue
            try:
                st = os.stat(f"{child.path}/{LOG_NAME}")
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                yield child.name, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _valid(name: str) -> bool:
    try:
        validate_thread_id(name)
    except InvalidThreadId:
        return False
    return True


def _load(home: Path) -> dict[str, Entry]:
    try:
        index = _decoder.decode(index_path(home).read_bytes())
    except (OSError, msgspec.DecodeError):
        return {}
    return index.entries if index.shape == SHAPE else {}


def _save(home: Path, entries: dict[str, Entry]) -> None:
    """Replace the index atomically; a home that cannot be written keeps
    listing correctly, only slower."""
    if not entries and not index_path(home).exists():
        return
    temp = home / f".{INDEX_NAME}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        temp.write_bytes(_encoder.encode(IndexFile(shape=SHAPE, entries=entries)))
        os.replace(temp, index_path(home))
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink()
