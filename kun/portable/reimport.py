"""Settling a staged import against the home: install it, report it already
there, refuse it as changed, or replace the thread (which goes to the trash).

The comparison is with the thread's imported prefix
(:mod:`kun.portable.previous`): turns run in kun since are the user's work
and are never taken for a change of the source. A session is compared by
its file's lines (the count and SHA-256 its ``thread_imported`` recorded):
unchanged, grown (the other agent went on: how many records) or rewritten,
whatever this kun's importer makes of them today. A bundle, or a session
imported before those were recorded, is compared by the bytes of the log.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kun.ids import new_id
from kun.portable.errors import ImportChanged, ImportConflict
from kun.portable.install import install, replace, same_thread
from kun.portable.previous import (
    Previous,
    SourceLines,
    previous_import,
    same_prefix,
    starts_with,
    turns_phrase,
)
from kun.store.paths import LOG_NAME, thread_dir

__all__ = ["CHANGED_HINT", "HTTP_HINT", "ImportResult", "Source", "settle"]

CHANGED_HINT = (
    "--replace imports it again (the thread as it is goes to the trash; kun restore "
    "brings it back), --as NEW_ID imports it beside it"
)

HTTP_HINT = (
    "?replace=1 imports it again (the thread as it is goes to the trash), "
    "?as=NEW_ID imports it beside it"
)
""":data:`CHANGED_HINT` in the words of ``POST /v1/threads/import``."""


@dataclass(frozen=True)
class ImportResult:
    """``detail``: what else to say (the turns run in kun since an unchanged
    import); ``suggests``: the arguments of each ``kun`` command it names
    (as :attr:`kun.errors.KunError.suggests`); ``trashed``: where a
    replaced thread went."""

    thread_id: str
    outcome: Literal["imported", "already_imported", "replaced"]
    events: int
    detail: str = ""
    trashed: Path | None = None
    suggests: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Source:
    """What is being imported: ``noun`` names it in messages (``session``,
    ``bundle``); a session also gives its file's bytes and lines;
    ``workspace``: the one asked for (``--workspace``)."""

    noun: str
    events: int
    prefix: int
    data: bytes | None = None
    lines: SourceLines | None = None
    workspace: Path | None = None


def settle(
    stage: Path, home: Path, thread_id: str, source: Source, *, replace_changed: bool
) -> ImportResult:
    """Install the thread staged under ``stage`` (its log's imported part is
    ``source.prefix`` bytes) as ``thread_id`` in ``home``, or say why not."""
    existing = thread_dir(home, thread_id)
    if not (existing / LOG_NAME).is_file():
        install(stage, home, thread_id, CHANGED_HINT)
        note, restore = _in_the_trash(home, thread_id)
        return ImportResult(thread_id, "imported", source.events, note, suggests=restore)
    previous = previous_import(existing / LOG_NAME)
    same = same_thread(thread_dir(stage, thread_id), existing)
    if previous is None and not same and not replace_changed:
        raise ImportConflict(thread_id, "give --as NEW_ID to import it as another thread")
    change = None if same else _change(stage, home, thread_id, source, previous)
    if change is None:
        turns = previous.turns_since if previous is not None else 0
        notes = [f"the thread has {turns_phrase(turns)}"] if turns else []
        rebind: tuple[tuple[str, ...], ...] = ()
        if source.workspace is not None:
            rebind = (
                ("run", "--thread", thread_id, "--workspace", str(source.workspace), "PROMPT"),
            )
            notes.append(
                "--workspace not applied to a thread already there: "
                f"{shlex.join(['kun', *rebind[0]])} rebinds it"
            )
        detail = "; ".join(notes)
        return ImportResult(thread_id, "already_imported", source.events, detail, suggests=rebind)
    if not replace_changed:
        changed = ImportChanged(thread_id, change, CHANGED_HINT)
        changed.suggests = ("restore",)
        raise changed
    entry = replace(stage, home, thread_id)
    return ImportResult(thread_id, "replaced", source.events, trashed=entry)


def _change(
    stage: Path, home: Path, thread_id: str, source: Source, previous: Previous | None
) -> str | None:
    """How the staged import differs from the thread in the home (which
    does not hold it byte for byte), or ``None`` when it brings nothing new."""
    staged, existing = thread_dir(stage, thread_id), thread_dir(home, thread_id)
    if previous is None:
        return f"it exists with other content (it was not imported from this {source.noun})"
    since = f"since it was imported at {previous.when}"
    own = f"the kun thread has {turns_phrase(previous.turns_since)}"
    recorded = previous.source_lines()
    if recorded is not None and source.data is not None:
        grown = recorded.grown_by(source.data)
        if grown == 0:
            return None
        if grown is None:
            lines = _count(recorded.count, "line")
            return f"the {source.noun} file was rewritten {since} (its first {lines} differ); {own}"
        return f"the {source.noun} has {_count(grown, 'new record')} {since}; {own}"
    old_log, new_log = existing / LOG_NAME, staged / LOG_NAME
    if same_prefix(old_log, previous.prefix, new_log, source.prefix):
        return None
    if source.prefix > previous.prefix and starts_with(new_log, old_log, previous.prefix):
        added = _newlines(new_log, previous.prefix, source.prefix)
        return f"the {source.noun} has {_count(added, 'new event')} {since}; {own}"
    return f"the {source.noun} differs from what was imported at {previous.when}; {own}"


def _in_the_trash(home: Path, thread_id: str) -> tuple[str, tuple[tuple[str, ...], ...]]:
    """A note naming the latest trashed thread of this id, if any, and the
    command it names: after a crash in the middle of a ``--replace``, or a
    ``kun rm``, the work in it is one ``kun restore`` away."""
    from kun.app.trash import trashed

    kept = next((t for t in trashed(home) if t.thread_id == thread_id), None)
    if kept is None:
        return "", ()
    restore = ("restore", kept.path.name, "--as", new_id("thr"))
    return (
        f"an earlier thread {thread_id} is in the trash: {shlex.join(['kun', *restore])} "
        "brings it back beside this one"
    ), (restore,)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _newlines(path: Path, start: int, end: int) -> int:
    count = 0
    with open(path, "rb") as file:
        file.seek(start)
        while start < end:
            chunk = file.read(min(1 << 20, end - start))
            if not chunk:
                break
            count += chunk.count(b"\n")
            start += len(chunk)
    return count
