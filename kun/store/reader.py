"""Streaming replay of one ``events.jsonl``.

The file is read in 1 MiB chunks and split on ``b"\\n"`` only (never
``splitlines``: U+2028 and friends are legal inside JSON strings). Complete
lines are decoded in sub-blocks of about 64 KiB, each a zero-copy view of the
chunk, with one ``Decoder.decode_lines`` call (a sub-block is small enough
for its events to stay in cache while the caller consumes them); a
sub-block that fails is decoded again line by line to find the culprit.
Memory is bounded by the chunk size and the longest line, never by the file:
no decoded event keeps a reference to a chunk (see
:func:`kun.store.codec.decode_block`).

Line numbers are not tracked on the hot path: when an error or a torn tail
needs one, it is counted from the file (a rare, one-off cost).

Seqs go 1, 2, 3, ... A decoded sub-block is checked at its ends only (its
first seq follows the last one read, its last is as far on as it has events);
a sub-block that fails this is read line by line, where each seq is checked.
So every gap is found, and so is every repeat that changes a block's count;
a block whose seqs are merely out of order between right ends (a 0 among
them: only a preview off the log has one) passes to the caller's fold,
which refuses any seq that is not after the last one, naming the line.
Checking each seq here would cost a tenth of the decode.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import BinaryIO, NamedTuple

import msgspec

from kun.contracts.events import Event
from kun.store.codec import (
    NotJson,
    UnknownKind,
    WrongShape,
    decode_block,
    decode_line,
    preview,
    stale_types,
)
from kun.store.errors import CorruptLog, UnknownEventKind
from kun.store.port import ReadMode, ReadReport, TornTail
from kun.store.torn import untorn_reason

__all__ = ["CHUNK_SIZE", "SUB_BLOCK_SIZE", "count_lines", "read_log"]

CHUNK_SIZE = 1 << 20
SUB_BLOCK_SIZE = 1 << 16
_JSON_SPACE = b" \t\r"


def read_log(
    path: Path,
    *,
    after: int = 0,
    until: int | None = None,
    limit: int | None = None,
    mode: ReadMode = "strict",
    report: ReadReport | None = None,
) -> Iterator[Event]:
    """Stream the events of the log at ``path`` with ``after < seq <= until``,
    at most ``limit`` of them.

    Reading stops once ``until`` is reached or ``limit`` events are handed
    out. Whole chunks and sub-blocks whose last line's seq is at or before
    ``after`` are skipped without decoding their events (that seq is read
    alone): damage before the window is neither raised nor counted, and
    ``report.lines`` counts only what was decoded. Bad lines, unknown kinds, gaps
    and repeats in the seqs and a torn last line are handled per ``mode``
    (see ``ReadMode``); what was skipped, missing or torn is recorded in
    ``report``. The file is opened when
    iteration starts and closed when it ends or the iterator is dropped.
    """
    if mode not in ("strict", "tolerant", "skip_bad"):
        raise ValueError(f"unknown read mode {mode!r}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must not be negative, got {limit}")
    if limit == 0:
        return iter(())
    reader = _LogReader(path, after, until, mode, ReadReport() if report is None else report)
    reader.left = limit
    return chain.from_iterable(reader.blocks())


def count_lines(fd: int, end: int) -> int:
    """Number of ``\\n`` in the first ``end`` bytes of the file open as ``fd``."""
    count = 0
    offset = 0
    while offset < end:
        data = os.pread(fd, min(CHUNK_SIZE, end - offset), offset)
        if not data:
            break
        count += data.count(b"\n")
        offset += len(data)
    return count


class _Line(NamedTuple):
    offset: int
    data: bytes
    reason: str


class _SeqOnly(msgspec.Struct):
    seq: int


_SEQ_ONLY = msgspec.json.Decoder(_SeqOnly)


def _last_seq(data: bytes, end: int) -> int | None:
    """The seq of the line ending at ``data[end - 1]`` (a newline), decoded
    alone; ``None`` when that line is not an object with an integer seq."""
    start = data.rfind(b"\n", 0, end - 1) + 1
    try:
        return _SEQ_ONLY.decode(memoryview(data)[start : end - 1]).seq
    except (msgspec.DecodeError, RecursionError):
        return None


def last_seq_before(path: Path, size: int) -> int | None:
    """The seq of the last whole line in the first ``size`` bytes of the
    log at ``path``: what a reader that looked at the log when it was
    ``size`` bytes long could see. ``None`` when there is no whole line
    there or that line holds no seq (a reader then sets no bound)."""
    with open(path, "rb", buffering=0) as file:
        fd = file.fileno()
        size = min(size, os.fstat(fd).st_size)
        window = 1 << 16
        while True:
            start = max(0, size - window)
            data = os.pread(fd, size - start, start)
            end = data.rfind(b"\n") + 1
            if end == 0:
                if start == 0:
                    return None
            elif data.rfind(b"\n", 0, end - 1) >= 0 or start == 0:
                return _last_seq(data, end)
            window *= 4


class _LogReader:
    __slots__ = (
        "_fd",
        "_seq",
        "_skipped",
        "_tail",
        "after",
        "left",
        "mode",
        "path",
        "report",
        "thread_id",
        "until",
    )

    def __init__(
        self, path: Path, after: int, until: int | None, mode: ReadMode, report: ReadReport
    ) -> None:
        self.path = path
        self.thread_id = path.parent.name
        self.after = after
        self.until = until
        self.mode = mode
        self.report = report
        self._fd = -1
        self._tail: tuple[int, bytes] = (0, b"")
        self._seq = 0
        self._skipped = 0
        self.left: int | None = None

    def blocks(self) -> Iterator[list[Event]]:
        """The events of the log, a sub-block at a time (``chain`` flattens
        them in C, which is measurably cheaper per event than resuming a
        generator for each)."""
        report = self.report
        windowed = bool(self.after) or self.until is not None or self.left is not None
        stale = stale_types()
        deferred: _Line | None = None
        with open(self.path, "rb", buffering=0) as file:
            self._fd = file.fileno()
            for data, cut, base in self._chunks(file):
                if deferred is not None:
                    self._bad(deferred)
                    deferred = None
                start = 0 if self._seq >= self.after else self._skip(data, 0, cut)
                while start < cut:
                    end = data.rfind(b"\n", start, start + SUB_BLOCK_SIZE) + 1
                    if end <= start:
                        end = data.find(b"\n", start) + 1
                    if self._seq < self.after and self._skip(data, start, end) == end:
                        start = end
                        continue
                    events = decode_block(data, start, end, stale, self.thread_id)
                    if events is not None and (
                        events[0].seq != self._seq + 1 or events[-1].seq != self._seq + len(events)
                    ):
                        events = None
                    error = None
                    if events is None:
                        final = end == len(data)
                        block = data[start:end]
                        events, deferred, error = self._slow(block, base + start, final)
                    else:
                        self._seq = events[-1].seq
                        self._skipped = 0
                        report.lines += len(events)
                        report.last_seq = self._seq
                    start = end
                    if events:
                        stop = False
                        if windowed:
                            events, stop = self._window(events)
                        report.events += len(events)
                        yield events
                        if stop:
                            return
                    if error is not None:
                        raise error
            self._finish(deferred)

    def _chunks(self, file: BinaryIO) -> Iterator[tuple[bytes, int, int]]:
        """Yield ``(data, cut, offset)``: ``data[:cut]`` are complete lines,
        ``data[cut:]`` the start of the next one, ``offset`` where ``data``
        starts in the file. A line longer than a chunk is gathered in pieces
        and joined once. Leaves what follows the last newline in
        ``self._tail``.

        The start of the next line is read again with the next chunk (a
        seek back of a line's length) rather than carried over and joined
        to it: joining copied every chunk once more."""
        pieces: list[bytes] = []
        carried = 0
        position = 0
        while data := file.read(CHUNK_SIZE):
            cut = data.rfind(b"\n") + 1
            if not cut:
                pieces.append(data)
                carried += len(data)
                continue
            if pieces:
                pieces.append(data)
                data = b"".join(pieces)
                cut += carried
                pieces, carried = [], 0
            yield data, cut, position
            position += cut
            if cut < len(data):
                file.seek(position)
        self._tail = (position, b"".join(pieces))

    def _skip(self, data: bytes, start: int, end: int) -> int:
        """Where reading ``data[start:end]`` (complete lines) must begin:
        ``end`` when its last line's seq is at or before ``after`` and after
        the last seq read (the lines are passed over, undecoded), else
        ``start``."""
        seq = _last_seq(data, end)
        if seq is None or not self._seq < seq <= self.after:
            return start
        self._seq = seq
        self._skipped = 0
        self.report.last_seq = seq
        return end

    def _window(self, events: list[Event]) -> tuple[list[Event], bool]:
        """Keep ``after < seq <= until`` and at most ``left`` events; true
        when reading should stop (at ``until`` itself: the seqs after it
        cannot be at or below it, and a prefix must not fail on damage past
        its end; likewise once ``left`` runs out)."""
        after, until = self.after, self.until
        last = events[-1].seq
        stop = False
        if events[0].seq <= after:
            events = [e for e in events if e.seq > after]
        if until is not None and last >= until:
            events, stop = [e for e in events if e.seq <= until], True
        if self.left is not None:
            if len(events) >= self.left:
                events, stop = events[: self.left], True
            self.left -= len(events)
        return events, stop

    def _finish(self, deferred: _Line | None) -> None:
        """Judge what the end of the file holds: a torn tail, or a bad line."""
        position, tail = self._tail
        if deferred is not None:
            why = None if tail else untorn_reason(deferred.data, terminated=True)
            if why is not None:
                self._bad(deferred._replace(reason=f"{deferred.reason}; {why}"))
            elif tail:
                self._bad(deferred)
            else:
                reason = f"last line is not valid JSON: {deferred.reason}"
                self._torn(deferred.offset, deferred.data + b"\n", reason)
        if tail:
            why = untorn_reason(tail, terminated=False)
            if why is not None:
                self._bad(_Line(position, tail, f"last line has no trailing newline; {why}"))
            else:
                self._torn(position, tail, "last line has no trailing newline")

    def _slow(
        self, block: bytes, offset: int, final: bool
    ) -> tuple[list[Event], _Line | None, CorruptLog | None]:
        """Decode ``block`` line by line, up to the first line that must
        raise (returned, to be raised once the events before it are
        yielded). A last line of the file that is not JSON may be a torn
        tail: it comes back deferred, to be judged once it is known whether
        anything follows it."""
        report = self.report
        lines = block.split(b"\n")
        lines.pop()
        last = len(lines) - 1
        events: list[Event] = []
        for index, line in enumerate(lines):
            if line.strip(_JSON_SPACE):
                error = None
                try:
                    event = decode_line(line, self.thread_id)
                except NotJson as exc:
                    bad = _Line(offset, line, exc.reason)
                    if final and index == last:
                        return events, bad, None
                    error = self._bad(bad, raise_=False)
                except WrongShape as exc:
                    error = self._bad(_Line(offset, line, exc.reason), raise_=False)
                except UnknownKind as exc:
                    error = self._unknown(offset, exc.kind, exc.seq)
                else:
                    keep, error = self._follows(event.seq, offset)
                    if keep:
                        report.lines += 1
                        report.last_seq = event.seq
                        events.append(event)
                if error is not None:
                    return events, None, error
            offset += len(line) + 1
        return events, None, None

    def _follows(self, seq: int, offset: int) -> tuple[bool, CorruptLog | None]:
        """Check that ``seq`` comes next: whether to keep its line, and the
        error to raise if it may not be read past. A gap is corrupt in strict
        mode and counted otherwise (unless bad lines skipped just before it
        fill it); a seq that is not after the last one is corrupt, or in
        ``skip_bad`` mode skipped and counted."""
        report = self.report
        last = self._seq
        if seq == last + 1:
            self._seq = seq
            self._skipped = 0
            return True, None
        if seq <= last:
            if self.mode == "skip_bad":
                report.lines += 1
                report.repeated_seqs += 1
                return False, None
            reason = f"seq {seq} is not after seq {last}, the previous line's"
            return False, CorruptLog(self.path, self._line_at(offset), report.last_seq, reason)
        missing = seq - last - 1
        if self.mode == "strict":
            span = f"seq {last + 1}" if missing == 1 else f"seqs {last + 1}..{seq - 1}"
            reason = f"seq jumps from {last} to {seq}: {span} missing"
            return False, CorruptLog(self.path, self._line_at(offset), report.last_seq, reason)
        if missing > self._skipped:
            report.seq_gaps += 1
            report.missing_seqs += missing - self._skipped
            if report.first_gap is None:
                report.first_gap = (last, seq)
        self._seq = seq
        self._skipped = 0
        return True, None

    def _bad(self, line: _Line, raise_: bool = True) -> CorruptLog | None:
        """Count a bad line in ``skip_bad`` mode; else the ``CorruptLog`` for
        it, raised unless ``raise_`` is false."""
        if self.mode == "skip_bad":
            self.report.lines += 1
            self.report.skipped_bad += 1
            self._skipped += 1
            return None
        error = CorruptLog(
            self.path,
            self._line_at(line.offset),
            self.report.last_seq,
            f"{line.reason}; the line starts {preview(line.data)!r}",
        )
        if raise_:
            raise error
        return error

    def _unknown(self, offset: int, kind: str, seq: int) -> CorruptLog | None:
        if self.mode == "strict":
            return UnknownEventKind(self.path, self._line_at(offset), self.report.last_seq, kind)
        if seq:
            keep, error = self._follows(seq, offset)
            if not keep:
                return error
        self.report.lines += 1
        self.report.unknown_kinds[kind] = self.report.unknown_kinds.get(kind, 0) + 1
        return None

    def _torn(self, offset: int, data: bytes, reason: str) -> None:
        self.report.torn_tail = TornTail(
            line=self._line_at(offset),
            offset=offset,
            size=len(data),
            reason=reason,
            preview=preview(data),
        )

    def _line_at(self, offset: int) -> int:
        return count_lines(self._fd, offset) + 1
