"""Which files a rewind may put back, and how: a pure plan from checkpoints.

A file tool records a :class:`~kun.contracts.items.FileCheckpoint` for each
change it makes: what the file held before (a side file, or nothing) and
the hash of what it left. To put the workspace back as it was before some
changes, each file's checkpoints are walked newest first, starting from the
file as it is on disk now: a step is sound only if the file holds what that
change left, and then it holds what the change found. A file whose walk
reaches its oldest change ends up as it was before it; one whose walk
breaks was changed by someone else (an editor, ``bash``, another program)
since, and is left alone and reported, never overwritten: a rewind must
not destroy work kun did not do. All or nothing per file: a file is never
put into a state between two of kun's changes.

The same plan undoes a restore: a restore's own changes are checkpoints too
(:class:`~kun.contracts.events.FilesRestore`).

A checkpoint recorded before the thread was imported (``thread_imported``,
:func:`imported_paths`) names a file on another machine, or in another
home: a path that means something else here, or that a hostile bundle chose
(``.ssh/authorized_keys``). Its file is never hashed nor written, only
reported (:data:`IMPORTED`): a restore acts only on changes kun made here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping

import msgspec
from msgspec import UnsetType

from kun.contracts.events import (
    Event,
    FileSkipped,
    FilesRestore,
    FilesRestoreStarted,
    ItemCompleted,
    SubagentStarted,
    ThreadRewindUndone,
    ThreadRewound,
)
from kun.contracts.items import BlobRef, FileCheckpoint, ToolResult
from kun.domain.state import Rewind

__all__ = [
    "ABSENT",
    "IMPORTED",
    "RestoreAction",
    "RestorePlan",
    "file_changes",
    "imported_paths",
    "plan_restore",
    "restoring_lines",
    "rewind_lines",
    "tracked_paths",
]

ABSENT: None = None
"""A file's hash when there is no file (as in a checkpoint's ``before``)."""

IMPORTED = "recorded on another machine (imported); never restored here, left as it is"
"""Why a file whose changes include one recorded before the import is left alone."""

NOT_A_FILE = "not-a-regular-file"
"""The hash the IO layer reports for a directory, link or device at a path:
it matches no checkpoint, so such a path is always left alone."""


class RestoreAction(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Put ``path`` back to ``content`` (``None``: remove the file), provided
    it still hashes to ``expected`` (``None``: absent) when the action runs."""

    path: str
    content: BlobRef | None
    expected: str | None


class RestorePlan(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``actions`` to take; ``skipped`` files left alone and why;
    ``unchanged`` files already as they were (nothing to do)."""

    actions: tuple[RestoreAction, ...] = ()
    skipped: tuple[FileSkipped, ...] = ()
    unchanged: tuple[str, ...] = ()


def tracked_paths(checkpoints: Iterable[FileCheckpoint]) -> list[str]:
    """The files ``checkpoints`` touch, each once, in first-touched order."""
    return list(dict.fromkeys(c.path for c in checkpoints))


def plan_restore(
    checkpoints: Iterable[FileCheckpoint],
    disk: Mapping[str, str | None],
    *,
    imported: Collection[str] = frozenset(),
) -> RestorePlan:
    """How to undo ``checkpoints`` (in the order the changes were made),
    given each file's SHA-256 on disk now (``None``: absent; a missing key
    counts as absent). A file in ``imported`` (:func:`imported_paths`) is
    skipped whole, whatever the disk says: all or nothing per file."""
    chains: dict[str, list[FileCheckpoint]] = {}
    for point in checkpoints:
        chains.setdefault(point.path, []).append(point)
    actions: list[RestoreAction] = []
    skipped: list[FileSkipped] = []
    unchanged: list[str] = []
    for path, chain in chains.items():
        if path in imported:
            skipped.append(FileSkipped(path=path, reason=IMPORTED))
            continue
        now = disk.get(path)
        target = chain[0].before
        if now == _sha(target):
            unchanged.append(path)
            continue
        problem = _walk(chain, now)
        if problem is not None:
            skipped.append(FileSkipped(path=path, reason=problem))
        else:
            actions.append(RestoreAction(path=path, content=target, expected=now))
    return RestorePlan(actions=tuple(actions), skipped=tuple(skipped), unchanged=tuple(unchanged))


def imported_paths(events: Iterable[Event], imported_through: int | UnsetType) -> frozenset[str]:
    """The files :func:`file_changes` of ``events`` names in a change
    recorded at or before ``imported_through`` (the latest
    ``thread_imported``; unset: the thread was never imported, none)."""
    if not isinstance(imported_through, int):
        return frozenset()
    early = (e for e in events if e.seq <= imported_through)
    return frozenset(tracked_paths(file_changes(early)))


def _walk(chain: list[FileCheckpoint], now: str | None) -> str | None:
    """``None`` if every change in ``chain`` can be undone from ``now``,
    else why not."""
    current = now
    for depth, point in enumerate(reversed(chain)):
        if current == point.after_sha256:
            current = _sha(point.before)
            continue
        if depth > 0:
            return "changed between kun's own changes (by bash or another program); left as it is"
        if current is None:
            return "deleted since kun changed it; left deleted"
        if current == NOT_A_FILE:
            return "no longer a regular file; left as it is"
        return "changed since kun changed it; left as it is"
    return None


def _sha(ref: BlobRef | None) -> str | None:
    return None if ref is None else ref.sha256


def rewind_lines(rewind: Rewind) -> list[str]:
    """What a rewind and its undo did to the files, for the transcript's
    closing summary (``kun replay``); nothing for a rewind without files."""
    lines = []
    for seq, done, verb in (
        (rewind.seq, rewind.files, "restored"),
        (rewind.undone_at_seq, rewind.undo_files, "put back"),
    ):
        if not isinstance(done, FilesRestore):
            continue
        what = "rewind" if verb == "restored" else "undo of the rewind"
        files = [p.path + (" (removed)" if p.after_sha256 is None else "") for p in done.restored]
        lines.append(f"files {verb} by the {what} at seq {seq}: {', '.join(files) or 'none'}")
        lines.extend(f"  not {verb}: {s.path}: {s.reason}" for s in done.skipped)
    return lines


def restoring_lines(intent: FilesRestoreStarted | UnsetType) -> list[str]:
    """What the transcript says of a restore whose outcome is not in the log
    (kun was killed while it changed files): nothing when there is none."""
    if not isinstance(intent, FilesRestoreStarted):
        return []
    what = (
        f"the undo of the rewind at seq {intent.rewind_seq}"
        if intent.rewind_seq is not None
        else f"a rewind before turn {intent.before_turn_id}"
    )
    paths = ", ".join(p.path for p in intent.planned)
    return [
        f"files: {what} (seq {intent.seq}) stopped before it finished; it was to change "
        f"{paths}. The next kun to open the thread (kun reconcile, a new turn, a rewind) "
        "records what it did"
    ]


def file_changes(
    events: Iterable[Event], side: Callable[[str], Iterable[FileCheckpoint]] | None = None
) -> list[FileCheckpoint]:
    """Every change to the workspace's files ``events`` record, in log
    order: the file tools' results (each once, in any turn, hidden or not:
    a rewind without ``--files`` or an interrupt that discarded the turn's
    items left the files as they were) and the changes restores and their
    undos made. Read from the log from a turn's start on, undoing them all,
    newest first, gives the files as they were before that turn.

    ``side`` gives the changes of a side thread (by id): a ``delegate_task``
    call's sub-agent changed files as part of the call, so its changes come
    where the call's result is, or at the end for a call cut short."""
    seen: set[str] = set()
    points: list[FileCheckpoint] = []
    links: dict[str, str] = {}
    for event in events:
        if isinstance(event, ItemCompleted):
            item = event.item
            if isinstance(item, ToolResult) and item.id not in seen:
                seen.add(item.id)
                if item.checkpoint is not None:
                    points.append(item.checkpoint)
                if side is not None and item.call_id in links:
                    points.extend(side(links.pop(item.call_id)))
        elif isinstance(event, ThreadRewound | ThreadRewindUndone) and event.files is not None:
            points.extend(event.files.restored)
        elif isinstance(event, SubagentStarted):
            links[event.call_id] = event.side_thread
    if side is not None:
        for thread in links.values():
            points.extend(side(thread))
    return points
