"""``kun import --from codex|claude-code``: another agent's session as a thread.

The session file is read as JSON lines (a line that is not a JSON object is
kept as an ``import_unreadable_line`` warning, never dropped), handed to the
format's importer (:mod:`kun.portable.codex`, :mod:`kun.portable.claude_code`),
and the events it builds are written through the store into a staging home,
replayed strictly, then installed (:mod:`kun.portable.install`). A tool
output too big for a log line goes to a side file as the runtime's would
(:mod:`kun.runtime.sidefiles`): the line keeps its head and the reference.

The thread id is derived from the source and its session id: ``thr_`` and
26 base32 characters of ``sha256("<source>:<session id>")``. Importing the
same session again therefore finds its thread, and compares the file with
what was imported from it (:mod:`kun.portable.reimport`): unchanged, it is
reported as already imported, with the turns run in kun since; grown or
rewritten, the import is refused saying how, unless ``--replace`` (the
thread as it is goes to the trash) or ``--as NEW_ID`` (imported beside it).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec

from kun.contracts.events import Event, ItemCompleted
from kun.contracts.items import ToolResult
from kun.portable.depth import MAX_DEPTH, TooDeep, decode_json
from kun.portable.errors import SourceRefused
from kun.portable.install import mark_imported, staging_home
from kun.portable.logcheck import check_log
from kun.portable.previous import SourceLines
from kun.portable.reimport import ImportResult, Source, settle
from kun.runtime.sidefiles import SIDE_FILE_THRESHOLD, head
from kun.store.blobs import FileBlobStore
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import LOG_NAME, blobs_dir, thread_dir, validate_thread_id

__all__ = [
    "Record",
    "import_session",
    "parse_records",
    "read_records",
    "session_thread_id",
]

Record = tuple[int, Any]
"""A line number and what the line decoded to."""

Importer = Callable[[Path, list[Record]], list[Event]]


def session_thread_id(source: str, session_id: str) -> str:
    digest = hashlib.sha256(f"{source}:{session_id}".encode()).digest()
    return "thr_" + base64.b32encode(digest).decode().lower()[:26]


def import_session(
    home: Path,
    path: Path,
    source: str,
    *,
    replace_changed: bool,
    workspace: Path | None = None,
    as_id: str | None = None,
) -> ImportResult:
    """Import the session file at ``path`` (``source``: ``codex`` or
    ``claude-code``); ``workspace``: where its new turns run here; ``as_id``:
    the thread's id instead of the one derived from the session's."""
    wanted = validate_thread_id(as_id) if as_id is not None else None
    data = _read(path)
    events = _importer(source)(path, parse_records(path, data))
    thread_id = wanted or events[0].thread_id
    if wanted is not None:
        events = [msgspec.structs.replace(event, thread_id=wanted) for event in events]
    lines = SourceLines.of(data)
    with staging_home(home) as stage:
        blobs = FileBlobStore(blobs_dir(stage, thread_id), thread_id)
        events = [_spill(event, blobs) for event in events]
        anyio.run(_write, stage, thread_id, events)
        log = thread_dir(stage, thread_id) / LOG_NAME
        prefix = mark_imported(log, thread_id, events[-1].seq, source, workspace, lines)
        check_log(log)
        imported = Source("session", len(events), prefix, data, lines, workspace)
        return settle(stage, home, thread_id, imported, replace_changed=replace_changed)


def read_records(path: Path) -> list[Record]:
    """Every line of ``path`` that holds something, decoded (see
    :func:`parse_records`)."""
    return parse_records(path, _read(path))


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except IsADirectoryError:
        raise SourceRefused(path, "is a directory, not a session file") from None


def parse_records(path: Path, data: bytes) -> list[Record]:
    """Every line of ``data`` (read from ``path``) that holds something,
    decoded (``None`` for a line that is not JSON). A file with no JSON
    object at all is refused, and so is a line nested deeper than
    :data:`MAX_DEPTH`, naming it."""
    records: list[Record] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            value = decode_json(line)
        except msgspec.DecodeError:
            value = None
        except TooDeep:
            raise SourceRefused(
                path, f"line {number} is nested more than {MAX_DEPTH} levels deep"
            ) from None
        records.append((number, value))
    if not any(isinstance(value, dict) for _, value in records):
        raise SourceRefused(path, "no JSON lines: not a session file")
    return records


def _importer(source: str) -> Importer:
    if source == "codex":
        from kun.portable.codex import import_codex

        return import_codex
    if source == "claude-code":
        from kun.portable.claude_code import import_claude_code

        return import_claude_code
    raise ValueError(f"unknown session source {source!r}")


def _spill(event: Event, blobs: FileBlobStore) -> Event:
    if not isinstance(event, ItemCompleted) or not isinstance(event.item, ToolResult):
        return event
    data = event.item.output.encode("utf-8", "surrogatepass")
    if len(data) <= SIDE_FILE_THRESHOLD:
        return event
    ref = blobs.put(data)
    item = msgspec.structs.replace(event.item, output=head(event.item.output), output_ref=ref)
    return msgspec.structs.replace(event, item=item)


async def _write(stage: Path, thread_id: str, events: list[Event]) -> None:
    async with JsonlEventStore(stage) as store:
        await store.append(thread_id, events, expected_seq=0)
