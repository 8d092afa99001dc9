"""``kun replay``'s output for one log file, as it is folded: the bytes for
stdout a chunk at a time, then the notes for stderr
(:meth:`kun.app.interface.Kun.replay`).

Both the transcript and the JSON projection come out while the log is
folded (see :func:`kun.store.streaming.stream_replay`): a turn as soon as
nothing later in the log can change it, the thread's summary last, since
only the whole log knows it. The output is the same bytes however it is
cut into chunks; a chunk is about :data:`TRANSCRIPT_FLUSH_AT` characters
of transcript or :data:`JSON_FLUSH_AT` bytes of JSON, the first at once.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator, Iterable, Iterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

from kun.app.answers import ReplayNote
from kun.app.requests import ReplayThread
from kun.domain.transcript import plural

__all__ = [
    "JSON_FLUSH_AT",
    "TRANSCRIPT_FLUSH_AT",
    "json_chunks",
    "replay_file",
    "replayed",
    "replayed_copy",
    "report_notes",
    "transcript_chunks",
]

TRANSCRIPT_FLUSH_AT = 1 << 16
JSON_FLUSH_AT = 1 << 20
_TURN_LEAD = b'{\n  "turns": [\n    '
_TURN_HEAD = len(_TURN_LEAD)
_TURN_TAIL = len(b"\n  ]\n}")


def replay_file(path: Path, request: ReplayThread) -> Generator[bytes | ReplayNote, None, None]:
    """The output of ``kun replay`` over the log at ``path``: stdout's
    chunks, then one :class:`ReplayNote` per note for stderr. A
    ``from_seq`` with ``json`` is a :class:`~kun.errors.UserMistake`."""
    from kun.errors import UserMistake
    from kun.store.port import ReadReport

    report = ReadReport()
    mode = "strict" if request.strict else "tolerant"
    if request.from_seq is not None:
        if request.json:
            raise UserMistake("--from-seq prints a transcript; --json prints the whole thread")
        yield _since(path, request, mode, report)
    else:
        yield from _streamed(path, request, mode, report)
    for note in report_notes(report):
        yield ReplayNote(text=note)


async def replayed(path: Path, request: ReplayThread) -> AsyncGenerator[bytes | ReplayNote, None]:
    """:func:`replay_file`, each piece folded in a worker thread, so an
    event loop that serves others (``kun serve``) is not held while a long
    log is read."""
    import anyio

    pieces = replay_file(path, request)
    try:
        while (piece := await anyio.to_thread.run_sync(next, pieces, None)) is not None:
            yield piece
    finally:
        pieces.close()


async def replayed_copy(
    thread_id: str, log: bytes, request: ReplayThread
) -> AsyncGenerator[bytes | ReplayNote, None]:
    """:func:`replayed` over ``log``, the log of ``thread_id`` fetched from
    elsewhere (a ``kun serve``): the same bytes and notes as a replay where
    it is held (a log is read from a folder named by its thread's id)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kun-replay-") as folder:
        path = Path(folder) / thread_id / "events.jsonl"
        path.parent.mkdir()
        path.write_bytes(log)
        async with aclosing(replayed(path, request)) as pieces:
            async for piece in pieces:
                yield piece


def _streamed(path: Path, request: ReplayThread, mode: str, report: Any) -> Iterator[bytes]:
    from kun.app.rewind_scan import RewindScan

    # The scan runs while the fold is imported: see kun.app.rewind_scan.
    with RewindScan(path) as scan:
        from kun.store.streaming import stream_replay

        pieces = stream_replay(
            path,
            until=request.until_seq,
            mode=mode,  # type: ignore[arg-type]
            report=report,
            rewound=scan.may_rewind,
            scanned=scan.size,
        )
        if request.json:
            yield from _gathered(json_chunks(pieces), JSON_FLUSH_AT)
        else:
            chunks = transcript_chunks(pieces, hidden=request.hidden, reasoning=request.reasoning)
            if request.children:
                chunks = with_children(chunks, path, request)
            yield from _gathered(_lines(chunks), TRANSCRIPT_FLUSH_AT)


_MAX_CHILD_DEPTH = 8


def with_children(
    chunks: Iterator[list[str]], path: Path, request: ReplayThread, depth: int = 0
) -> Iterator[list[str]]:
    """``chunks`` with each side thread's turns after the line that names
    it (:func:`kun.domain.transcript.side_thread_line`), indented, read from
    the side thread's log beside ``path`` (a home's ``threads/<id>/``)."""
    from kun.domain.transcript import SIDE_THREAD

    for chunk in chunks:
        lines: list[str] = []
        for line in chunk:
            lines.append(line)
            body = line.lstrip(" ")
            if depth < _MAX_CHILD_DEPTH and body.startswith(SIDE_THREAD):
                indent = " " * (len(line) - len(body) + 2)
                child = body[len(SIDE_THREAD) :].split(" ", 1)[0]
                lines.extend(indent + row for row in _child_lines(child, path, request, depth))
        yield lines


def _child_lines(child: str, path: Path, request: ReplayThread, depth: int) -> list[str]:
    from kun.errors import KunError
    from kun.store.replay import replay_log

    log = path.parent.parent / child / path.name
    if not log.is_file():
        return ["(its log is not here)"]
    try:
        state = replay_log(log, mode="tolerant")
    except (KunError, OSError) as exc:
        return [f"(its log cannot be read: {exc})"]
    chunks = transcript_chunks(state.turns, hidden=request.hidden, reasoning=request.reasoning)
    return [row for chunk in with_children(chunks, log, request, depth + 1) for row in chunk]


def _lines(chunks: Iterator[list[str]]) -> Iterator[bytes]:
    """Each chunk's lines, each line ended, as UTF-8."""
    for chunk in chunks:
        yield ("\n".join(chunk) + "\n").encode()


def _since(path: Path, request: ReplayThread, mode: str, report: Any) -> bytes:
    from kun.domain.transcript import render_since
    from kun.store.replay import replay_since

    assert request.from_seq is not None
    before, state = replay_since(
        path,
        request.from_seq,
        until=request.until_seq,
        mode=mode,  # type: ignore[arg-type]
        report=report,
    )
    lines = render_since(
        before, state, show_hidden=request.hidden, show_reasoning=request.reasoning
    )
    return ("\n".join(lines) + "\n").encode()


def _gathered(chunks: Iterator[bytes], flush_at: int) -> Iterator[bytes]:
    """``chunks`` joined into pieces of about ``flush_at`` bytes, the first
    chunk alone (so the first turn shows at once)."""
    pending: list[bytes] = []
    size = 0
    for number, chunk in enumerate(chunks):
        pending.append(chunk)
        size += len(chunk)
        if number == 0 or size >= flush_at:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def transcript_chunks(
    pieces: Iterable[Any], *, hidden: bool = False, reasoning: bool = False
) -> Iterator[list[str]]:
    """The transcript's chunks (as :func:`kun.domain.transcript.iter_transcript`
    draws them) from the pieces of :func:`kun.store.streaming.stream_replay`."""
    from kun.domain.state import TurnState
    from kun.domain.transcript import summary_lines, turn_lines

    number = 0
    for piece in pieces:
        if isinstance(piece, TurnState):
            number += 1
            yield turn_lines(number, piece, show_hidden=hidden, show_reasoning=reasoning)
        else:
            yield summary_lines(piece)


def json_chunks(pieces: Iterable[Any]) -> Iterator[bytes]:
    """The projection as indented JSON, a turn at a time: ``turns`` first,
    then the thread's other fields, which only the whole log knows. Decodes
    to the same ``ThreadState`` as the whole projection encoded at once."""
    import msgspec

    from kun.domain.state import TurnState

    encode = msgspec.json.Encoder().encode
    form = msgspec.json.format
    opened = False
    for piece in pieces:
        if isinstance(piece, TurnState):
            # Formatted inside a one-turn ``turns`` list, the turn comes out
            # indented as it sits in the document: one pass fewer than
            # indenting it after formatting.
            body = form(encode({"turns": [piece]}), indent=2)[_TURN_HEAD:-_TURN_TAIL]
            yield (b",\n    " if opened else _TURN_LEAD) + body
            opened = True
            continue
        shell = form(encode(msgspec.structs.replace(piece, turns=())), indent=2)
        rest = shell.replace(b'\n  "turns": [],', b"", 1)[1:]
        yield (b"\n  ]," if opened else b'{\n  "turns": [],') + rest + b"\n"


def report_notes(report: Any) -> Iterator[str]:
    """What a tolerant read skipped or found missing, one note each."""
    if report.seq_gaps:
        before, after = report.first_gap
        yield (
            f"note: {plural(report.missing_seqs, 'event')} missing from the log "
            f"(its seqs jump {plural(report.seq_gaps, 'time')}, first from seq {before} "
            f"to {after}); "
            "--strict refuses such logs"
        )
    if report.unknown:
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(report.unknown_kinds.items()))
        yield (
            f"note: skipped {plural(report.unknown, 'event')} of kinds this kun does not know "
            f"({kinds}); "
            "the log was written by a newer kun (--strict refuses such logs)"
        )
    torn = report.torn_tail
    if torn is not None:
        yield (
            f"note: ignored a torn last line ({torn.size} bytes at line {torn.line}: "
            f"{torn.reason}); the next write to this thread repairs it"
        )
