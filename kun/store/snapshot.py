"""Snapshots: a disposable cache of a thread's projection beside its log.

Opening a long thread means folding its whole log. A snapshot holds the
projection up to some seq and the byte offset in the log just after that
seq's line, so opening folds only the tail. It is a cache, never a source of
truth: it is used only when it verifiably describes a prefix of this very
log — its format, its thread, an offset inside the file, and the line ending
at that offset being byte for byte the line it was taken after. That digest
of one line is the cheap check: a log truncated or replaced below the offset
is caught, a rewrite strictly inside the prefix is not (logs are append-only;
a repair only cuts a torn tail, which lies past any snapshot's line). Anything
else (missing, corrupt, truncated, foreign, another format, a tail that does
not read cleanly) makes :func:`resume` return ``None`` and the caller replay
the log in full, exactly as it would without a snapshot; the full replay then
names any damage by line. Written atomically (temp file and ``os.replace``),
never fsynced: losing one costs a full replay, nothing more.

The file is a 4-byte big-endian length and a msgpack header of that length,
then the projection as JSON frames (an 8-byte length, then the JSON): the
*outline* (the thread with every turn, the settled ones without their
items), then each turn whole. The outline is what a summary of the thread needs (title, status,
turn count, usage): :func:`read_outline` reads it and folds the tail onto it
in time and memory that grow with the turns, not the events. JSON, because
``ToolCall.arguments`` is a ``msgspec.Raw`` holding JSON, which msgpack would
embed verbatim and could not read back. The header is checked before the
projection is read (so a snapshot of another thread or a stale one costs
little), and a frame at a time keeps the peak memory of opening near the
projection's own size instead of adding the whole file's.

A snapshot also names the code that folded it (:func:`code_digest`, a digest
of the sources that decide what a log folds to): a projection is a function
of the log *and* of the reducers, so a snapshot written by another version of
kun, or before a reducer changed, is another format and is rebuilt. A format
number bumped by hand is forgotten the day someone adds a field to the state
or changes how an event folds; the digest is not.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import msgspec

from kun import __version__
from kun.contracts.events import Event
from kun.contracts.items import ToolCall
from kun.domain.errors import ProjectionError
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState, TurnState
from kun.store.codec import LineError, decode_block, decode_line, stale_types
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import log_path, thread_dir

__all__ = [
    "FORMAT",
    "SNAPSHOT_AFTER",
    "SNAPSHOT_NAME",
    "SnapshotHeader",
    "SnapshotReader",
    "SnapshotUnusable",
    "Snapshots",
    "code_digest",
    "encode_state",
    "open_snapshot",
    "outline_of",
    "pack",
    "read_outline",
    "resume",
    "snapshot_path",
    "snapshots_of",
    "unpack",
    "write_snapshot",
]

SNAPSHOT_NAME = "snapshot.msgpack"
FORMAT = 3
SNAPSHOT_AFTER = 10_000
"""A thread is snapshotted at a clean close once its log holds this many
events: below it a full replay takes milliseconds and a snapshot is clutter."""
_CHUNK = 1 << 20
_BLOCK = 1 << 16
_BACK = 1 << 12
_KUN = Path(__file__).resolve().parents[1]
_FOLD_SOURCES = ("contracts/*.py", "domain/*.py", "store/codec.py", "store/snapshot.py")
"""What a log folds to, under ``kun/``: the contracts (what events and items
are), the domain (how they fold, upcasting included), the codec (how a line
becomes an event) and this module (how the projection is written)."""


class SnapshotHeader(msgspec.Struct, array_like=True):
    """What a snapshot claims: ``last_seq`` of ``thread_id`` is the line of
    the log that ends at byte ``offset`` and has ``line_digest``; ``turns``
    frames follow the thread's; the code whose :func:`code_digest` is
    ``code`` folded them."""

    format: int
    thread_id: str
    last_seq: int
    offset: int
    line_digest: bytes
    turns: int
    code: bytes = b""


_HEADER = msgspec.msgpack.Decoder(SnapshotHeader)
_SHELL = msgspec.json.Decoder(ThreadState)
_TURN = msgspec.json.Decoder(TurnState)
_encode = msgspec.json.Encoder().encode


class _Unusable(Exception):
    """The snapshot or the tail cannot be trusted: replay in full."""


SnapshotUnusable = _Unusable


@functools.cache
def code_digest() -> bytes:
    """The digest of the sources that decide what a log folds to (see
    :data:`_FOLD_SOURCES`), read once per process (about a millisecond)."""
    return sources_digest(_KUN)


def sources_digest(root: Path) -> bytes:
    """The digest of :data:`_FOLD_SOURCES` under ``root``, names and bytes.
    Without readable sources (a build that ships only bytecode), the digest
    of what could be read, kun's version included: snapshots then last as
    long as that version."""
    digest = hashlib.blake2b(__version__.encode(), digest_size=16)
    for pattern in _FOLD_SOURCES:
        for path in sorted(root.glob(pattern)):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(len(data).to_bytes(8, "big") + data)
    return digest.digest()


def snapshot_path(home: Path, thread_id: str) -> Path:
    """``<home>/threads/<thread_id>/snapshot.msgpack``."""
    return thread_dir(home, thread_id) / SNAPSHOT_NAME


class Snapshots:
    """The snapshots of the threads of one JSONL home. Remembers the seq of
    each snapshot it read or wrote, so saving one that is already on disk
    costs nothing."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self._seqs: dict[str, int] = {}

    def resume(self, thread_id: str) -> Projector | None:
        """See :func:`resume`."""
        path = snapshot_path(self.home, thread_id)
        resumed = _resume(path, log_path(self.home, thread_id), thread_id)
        if resumed is None:
            return None
        projector, self._seqs[thread_id] = resumed
        return projector

    def save(self, state: ThreadState) -> bool:
        """Snapshot ``state``, whose last event must end the thread's log
        (see :func:`write_snapshot`)."""
        thread_id = state.thread_id
        if self._seqs.get(thread_id) == state.last_seq:
            return True
        path = snapshot_path(self.home, thread_id)
        if not write_snapshot(path, log_path(self.home, thread_id), state):
            return False
        self._seqs[thread_id] = state.last_seq
        return True


def snapshots_of(store: object) -> Snapshots | None:
    """The snapshots of ``store``'s threads, if it keeps logs in files (an
    in-memory store replays fast and has nowhere to keep them)."""
    return Snapshots(store.home) if isinstance(store, JsonlEventStore) else None


def write_snapshot(path: Path, log: Path, state: ThreadState, offset: int | None = None) -> bool:
    """Save ``state`` as the snapshot at ``path`` of the log at ``log``,
    whose line for ``state.last_seq`` ends at byte ``offset`` (the end of
    the file when ``None``). Checks that line first and writes nothing (false)
    if it does not hold that seq of that thread, or if the file cannot be
    written: a snapshot is an optimisation, never worth failing for."""
    if state.last_seq <= 0 or not state.thread_id:
        return False
    try:
        with open(log, "rb", buffering=0) as file:
            fd = file.fileno()
            end = os.fstat(fd).st_size if offset is None else offset
            digest = _line_digest(fd, end, state.thread_id, state.last_seq)
        header = SnapshotHeader(
            FORMAT, state.thread_id, state.last_seq, end, digest, len(state.turns), code_digest()
        )
        temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            with open(temp, "wb") as out:
                out.write(pack(header, b""))
                out.writelines(encode_state(state))
            os.replace(temp, path)
        finally:
            temp.unlink(missing_ok=True)
    except (OSError, _Unusable):
        return False
    return True


def resume(path: Path, log: Path, thread_id: str) -> Projector | None:
    """A fold of the whole log at ``log``, started from the snapshot at
    ``path`` and fed only the events after it; ``None`` when the snapshot is
    missing or cannot be trusted, or the tail does not read cleanly (replay
    the log in full instead)."""
    resumed = _resume(path, log, thread_id)
    return None if resumed is None else resumed[0]


def _resume(path: Path, log: Path, thread_id: str) -> tuple[Projector, int] | None:
    try:
        with open(path, "rb") as snap, open(log, "rb", buffering=0) as file:
            fd = file.fileno()
            size = int.from_bytes(_read(snap, 4), "big")
            header = _HEADER.decode(_read(snap, size))
            _verify(header, fd, thread_id)
            projector = Projector(_read_state(snap, header))
            projector.apply_all(_tail(fd, header.offset, header.last_seq, thread_id))
    except (OSError, msgspec.DecodeError, RecursionError, _Unusable, ProjectionError):
        return None
    return projector, header.last_seq


def read_outline(path: Path, log: Path, thread_id: str) -> ThreadState | None:
    """The outline of the whole log at ``log``: the snapshot's outline (see
    :func:`outline_of`) with the tail folded onto it. The thread-level fields
    and every turn's are a full replay's, and so are the items of the turns
    open at the snapshot or started after it; the turns settled at the
    snapshot hold none. For a summary of the thread, never for a request or a
    transcript. ``None`` as :func:`resume` would be."""
    try:
        with open(path, "rb") as snap, open(log, "rb", buffering=0) as file:
            fd = file.fileno()
            header = _HEADER.decode(_read(snap, int.from_bytes(_read(snap, 4), "big")))
            _verify(header, fd, thread_id)
            projector = Projector(_read_outline(snap, header))
            projector.apply_all(_tail(fd, header.offset, header.last_seq, thread_id))
    except (OSError, msgspec.DecodeError, RecursionError, _Unusable, ProjectionError):
        return None
    return projector.snapshot()


class SnapshotReader:
    """A snapshot that verified against its log, read a frame at a time, for
    a reader that shows the projection rather than continuing it: ``shell``
    (the thread without its turns), then :meth:`turns`, then :meth:`tail`.
    Both iterators raise ``SnapshotUnusable`` on anything they cannot read
    (the frames' lengths were checked on opening, their JSON was not)."""

    def __init__(
        self, snap: BinaryIO, log: BinaryIO, header: SnapshotHeader, shell: ThreadState
    ) -> None:
        self._snap = snap
        self._log = log
        self.header = header
        self.shell = shell

    def turns(self) -> Iterator[TurnState]:
        for _ in range(self.header.turns):
            try:
                turn = _TURN.decode(_read(self._snap, int.from_bytes(_read(self._snap, 8), "big")))
            except (msgspec.DecodeError, RecursionError):
                raise _Unusable("a turn's frame does not decode") from None
            _detach_arguments(turn)
            yield turn

    def tail(self) -> Iterator[Event]:
        """The log's events after the snapshot, read strictly."""
        header = self.header
        return _tail(self._log.fileno(), header.offset, header.last_seq, header.thread_id)

    def close(self) -> None:
        self._snap.close()
        self._log.close()


def open_snapshot(path: Path, log: Path, thread_id: str) -> SnapshotReader | None:
    """The snapshot at ``path`` of the log at ``log``, checked as
    :func:`resume` checks it and its frames' lengths walked to the end of the
    file; ``None`` if it is missing or cannot be trusted. Close it."""
    snap = log_file = None
    try:
        snap = open(path, "rb")
        log_file = open(log, "rb", buffering=0)
        size = int.from_bytes(_read(snap, 4), "big")
        header = _HEADER.decode(_read(snap, size))
        _verify(header, log_file.fileno(), thread_id)
        shell = msgspec.structs.replace(_read_outline(snap, header), turns=())
        first = snap.tell()
        for _ in range(header.turns):
            snap.seek(int.from_bytes(_read(snap, 8), "big"), os.SEEK_CUR)
        if snap.tell() != os.fstat(snap.fileno()).st_size:
            raise _Unusable("the frames do not end the file")
        snap.seek(first)
    except (OSError, msgspec.DecodeError, RecursionError, _Unusable):
        for file in (snap, log_file):
            if file is not None:
                file.close()
        return None
    return SnapshotReader(snap, log_file, header, shell)


def encode_state(state: ThreadState) -> Iterator[bytes]:
    """The frames of ``state``: its outline, then each turn."""
    for part in (outline_of(state), *state.turns):
        data = _encode(part)
        yield len(data).to_bytes(8, "big")
        yield data


def outline_of(state: ThreadState) -> ThreadState:
    """``state`` with every turn, the settled ones without their items (a
    turn still open keeps them: the tail may continue its items)."""
    strip = msgspec.structs.replace
    return strip(state, turns=tuple(strip(t, items=()) if t.settled else t for t in state.turns))


def _read_outline(snap: BinaryIO, header: SnapshotHeader) -> ThreadState:
    outline = _SHELL.decode(_read(snap, int.from_bytes(_read(snap, 8), "big")))
    if (
        outline.thread_id != header.thread_id
        or outline.last_seq != header.last_seq
        or len(outline.turns) != header.turns
        or any(t.items for t in outline.turns if t.settled)
    ):
        raise _Unusable("the outline is not the header's")
    return outline


def _read_state(snap: BinaryIO, header: SnapshotHeader) -> ThreadState:
    outline = _read_outline(snap, header)
    parts: list[TurnState] = []
    for brief in outline.turns:
        turn = _TURN.decode(_read(snap, int.from_bytes(_read(snap, 8), "big")))
        if turn.turn_id != brief.turn_id:
            raise _Unusable("a turn's frame is not the outline's")
        _detach_arguments(turn)
        parts.append(turn)
    if snap.read(1):
        raise _Unusable("more frames than the header says")
    return msgspec.structs.replace(outline, turns=tuple(parts))


def _read(snap: BinaryIO, size: int) -> bytes:
    data = snap.read(size)
    if len(data) != size:
        raise _Unusable("the snapshot is truncated")
    return data


def pack(header: SnapshotHeader, body: bytes) -> bytes:
    """A snapshot file's bytes: the header's length, the header, the body."""
    head = msgspec.msgpack.encode(header)
    return len(head).to_bytes(4, "big") + head + body


def unpack(data: bytes) -> tuple[SnapshotHeader, memoryview]:
    """The header and a view of the body of a snapshot file's bytes; raises
    ``msgspec.DecodeError`` if they are not a snapshot."""
    size = int.from_bytes(data[:4], "big")
    if len(data) < 4 + size:
        raise msgspec.DecodeError("truncated snapshot header")
    return _HEADER.decode(data[4 : 4 + size]), memoryview(data)[4 + size :]


def _verify(header: SnapshotHeader, fd: int, thread_id: str) -> None:
    if header.format != FORMAT or header.thread_id != thread_id:
        raise _Unusable("another format or another thread")
    if header.code != code_digest():
        raise _Unusable("folded by other code: another version of kun or of its reducers")
    if not 0 < header.offset <= os.fstat(fd).st_size:
        raise _Unusable("the log ends before the snapshot's offset")
    digest = _line_digest(fd, header.offset, thread_id, header.last_seq)
    if digest != header.line_digest:
        raise _Unusable("the log was rewritten below the snapshot's offset")


def _line_digest(fd: int, end: int, thread_id: str, seq: int) -> bytes:
    """The digest of the line ending at byte ``end`` (its newline at
    ``end - 1``), after checking that it holds event ``seq`` of the thread."""
    if end <= 0 or os.pread(fd, 1, end - 1) != b"\n":
        raise _Unusable("no line ends at the offset")
    pieces: list[bytes] = []
    position = end - 1
    while position > 0:
        start = max(0, position - _BACK)
        data = os.pread(fd, position - start, start)
        cut = data.rfind(b"\n") + 1
        pieces.append(data[cut:])
        if cut:
            break
        position = start
    line = b"".join(reversed(pieces))
    try:
        event = decode_line(line, thread_id)
    except LineError:
        raise _Unusable("the line at the offset is not an event") from None
    if event.seq != seq or event.thread_id != thread_id:
        raise _Unusable("the line at the offset is another event")
    return hashlib.blake2b(line, digest_size=16).digest()


def _tail(fd: int, offset: int, last_seq: int, thread_id: str) -> Iterator[Event]:
    """The events after ``offset``, strictly: every line a current or
    upcast event, seqs following ``last_seq`` one by one, the file ending
    with a newline. Anything else is ``_Unusable`` (the full replay judges it)."""
    stale = stale_types()
    carry = b""
    position = offset
    while chunk := os.pread(fd, _CHUNK, position):
        position += len(chunk)
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n") + 1
        carry = data[cut:]
        start = 0
        while start < cut:
            end = data.rfind(b"\n", start, start + _BLOCK) + 1
            if end <= start:
                end = data.find(b"\n", start) + 1
            events = decode_block(data, start, end, stale, thread_id)
            if events is None:
                events = _slow(data[start : end - 1], thread_id)
            if events[0].seq != last_seq + 1 or events[-1].seq != last_seq + len(events):
                raise _Unusable("the tail's seqs do not follow the snapshot")
            last_seq = events[-1].seq
            yield from events
            start = end
    if carry:
        raise _Unusable("the log ends in a torn line")


def _slow(block: bytes, thread_id: str) -> list[Event]:
    try:
        return [decode_line(line, thread_id) for line in block.split(b"\n")]
    except LineError:
        raise _Unusable("a bad line in the tail") from None


def _detach_arguments(turn: TurnState) -> None:
    """A decoded ``msgspec.Raw`` is a view keeping its whole frame alive:
    copy tool-call arguments out (in place, the items are brand new)."""
    for item in turn.items:
        if type(item) is ToolCall:
            msgspec.structs.force_setattr(item, "arguments", item.arguments.copy())
