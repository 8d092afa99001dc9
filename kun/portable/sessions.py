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
same session again therefore finds its thread: unchanged, it is reported as
already imported; changed since (the other agent went on), the import is
refused unless ``--replace`` (which swaps the whole thread, under its writer
lock).
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
from kun.portable.errors import SourceRefused
from kun.portable.install import install, mark_imported, replace, same_thread, staging_home
from kun.portable.logcheck import check_log
from kun.portable.unbundle import ImportResult
from kun.runtime.sidefiles import SIDE_FILE_THRESHOLD, head
from kun.store.blobs import FileBlobStore
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import LOG_NAME, blobs_dir, thread_dir

__all__ = ["MAX_DEPTH", "Record", "import_session", "read_records", "session_thread_id"]

Record = tuple[int, Any]
"""A line number and what the line decoded to."""

Importer = Callable[[Path, list[Record]], list[Event]]

MAX_DEPTH = 128
"""Deepest nesting of lists and objects taken in a session record. Real
records nest a dozen levels; one much deeper is refused naming its line,
because what it would become (a tool call's arguments, a result) must decode
again in every reader and be sent to a model, whose stack is deeper than
this one's (a decoder gives up at about a thousand levels, fewer on a deep
stack)."""

_TOO_DEEP = object()


def session_thread_id(source: str, session_id: str) -> str:
    digest = hashlib.sha256(f"{source}:{session_id}".encode()).digest()
    return "thr_" + base64.b32encode(digest).decode().lower()[:26]


def import_session(
    home: Path, path: Path, source: str, *, replace_changed: bool, workspace: Path | None = None
) -> ImportResult:
    """Import the session file at ``path`` (``source``: ``codex`` or
    ``claude-code``); ``workspace``: where its new turns run here."""
    events = _importer(source)(path, read_records(path))
    thread_id = events[0].thread_id
    with staging_home(home) as stage:
        blobs = FileBlobStore(blobs_dir(stage, thread_id), thread_id)
        events = [_spill(event, blobs) for event in events]
        anyio.run(_write, stage, thread_id, events)
        staged = thread_dir(stage, thread_id)
        mark_imported(staged / LOG_NAME, thread_id, events[-1].seq, source, workspace)
        check_log(staged / LOG_NAME)
        existing = thread_dir(home, thread_id)
        if same_thread(staged, existing):
            return ImportResult(thread_id, "already_imported", len(events))
        if (existing / LOG_NAME).is_file() and replace_changed:
            replace(stage, home, thread_id)
            return ImportResult(thread_id, "replaced", len(events))
        hint = "the session changed since it was imported: --replace imports it again"
        install(stage, home, thread_id, hint)
        return ImportResult(thread_id, "imported", len(events))


def read_records(path: Path) -> list[Record]:
    """Every line of ``path`` that holds something, decoded (``None`` for a
    line that is not JSON). A file with no JSON object at all is refused,
    and so is a line nested deeper than :data:`MAX_DEPTH`, naming it."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise SourceRefused(path, "is a directory, not a session file") from None
    records: list[Record] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            value = msgspec.json.decode(line)
        except msgspec.DecodeError:
            value = None
        except RecursionError:
            value = _TOO_DEEP
        if value is _TOO_DEEP or _deeper_than(value, MAX_DEPTH):
            raise SourceRefused(path, f"line {number} is nested more than {MAX_DEPTH} levels deep")
        records.append((number, value))
    if not any(isinstance(value, dict) for _, value in records):
        raise SourceRefused(path, "no JSON lines: not a session file")
    return records


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` deep
    (walked without recursion: the point is a value too deep to recurse)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False


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
