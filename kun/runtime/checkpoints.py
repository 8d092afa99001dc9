"""Putting a workspace's files back: the IO around :mod:`kun.domain.checkpoints`.

``kun rewind --files`` (and its undo) hashes the files the hidden turns'
checkpoints name, plans with :func:`~kun.domain.checkpoints.plan_restore`,
then carries the plan out file by file through descriptors beneath the
workspace root (:class:`~kun.tools.workspace.Workspace`), checking each
file's hash once more right before touching it, so a file that changed
between the plan and the write is left alone too.

Before a file is overwritten or removed, what it holds is saved as a side
file, and the :class:`~kun.contracts.events.FilesRestore` the caller records
with the rewind names it: undoing the rewind plans from those checkpoints
and puts the files back the same careful way. The log stays exact across a
kill: the side files are saved and a
:class:`~kun.contracts.events.FilesRestoreStarted` (what will change, the
hashes before and after) is recorded durably before the first file changes;
the outcome is recorded after the last. An intent left without an outcome
is settled at the next open (:mod:`kun.runtime.restore_recovery`).

Only kun's own file tools record checkpoints: what ``bash`` did is not
tracked and not undone (:data:`UNTRACKED_NOTE`). Nor are the changes an
imported thread brought with it (:data:`~kun.domain.checkpoints.IMPORTED`):
their files are not even read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Collection, Iterable
from pathlib import Path

import anyio
import msgspec

from kun.contracts.events import Event, FileSkipped, FilesRestore, FilesRestoreStarted
from kun.contracts.items import FileCheckpoint, ToolResult
from kun.domain.checkpoints import (
    IMPORTED,
    NOT_A_FILE,
    RestoreAction,
    file_changes,
    imported_paths,
    plan_restore,
    tracked_paths,
)
from kun.domain.state import ThreadState, TurnState
from kun.runtime.context import draft
from kun.runtime.recorder import EventRecorder
from kun.runtime.sidefiles import copy_side_files
from kun.store.blobs import BlobError, BlobStore
from kun.store.errors import ThreadNotFound
from kun.store.port import EventStore
from kun.tools.atomic import replace_file
from kun.tools.errors import ToolError
from kun.tools.workspace import Workspace

__all__ = [
    "UNTRACKED_NOTE",
    "Prepared",
    "carry_out",
    "checkpoints_of",
    "describe_restore",
    "disk_hashes",
    "logged_restore",
    "prepare",
    "restore",
    "rewind_files",
    "undo_rewind_files",
]

UNTRACKED_NOTE = (
    "only changes made by kun's write_file and edit_file are restored; "
    "what bash commands did is not tracked"
)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def checkpoints_of(turns: Iterable[TurnState]) -> list[FileCheckpoint]:
    """The checkpoints of ``turns``' tool results, in the order they were made."""
    return [
        item.checkpoint
        for turn in turns
        for item in turn.items
        if isinstance(item, ToolResult) and item.checkpoint is not None
    ]


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """A restore ready to run: each action with the checkpoint of the change
    it will make (its ``before`` already saved), and the files left alone."""

    actions: tuple[tuple[RestoreAction, FileCheckpoint], ...] = ()
    skipped: tuple[FileSkipped, ...] = ()

    def intent(self) -> tuple[tuple[FileCheckpoint, ...], tuple[FileSkipped, ...]]:
        """What a :class:`~kun.contracts.events.FilesRestoreStarted` records."""
        return tuple(point for _, point in self.actions), self.skipped


def prepare(
    workspace: Path,
    blobs: BlobStore,
    points: list[FileCheckpoint],
    imported: Collection[str] = frozenset(),
) -> Prepared:
    """Plan the undoing of ``points`` from the files' hashes now and save,
    durably, what each file to change holds (blocking IO); nothing in the
    workspace changes. Files in ``imported`` are neither read nor changed."""
    paths = tracked_paths(points)
    if not workspace.is_dir():
        why = f"the workspace {workspace} is not a directory now; left alone"
        return Prepared(
            skipped=tuple(
                FileSkipped(path=p, reason=IMPORTED if p in imported else why) for p in paths
            )
        )
    root = Workspace(workspace)
    here = [p for p in paths if p not in imported]
    plan = plan_restore(points, disk_hashes(workspace, here), imported=imported)
    actions: list[tuple[RestoreAction, FileCheckpoint]] = []
    skipped = list(plan.skipped)
    for action in plan.actions:
        try:
            actions.append((action, _save(root, blobs, action)))
        except _Skip as exc:
            skipped.append(FileSkipped(path=action.path, reason=str(exc)))
    return Prepared(actions=tuple(actions), skipped=tuple(skipped))


def carry_out(workspace: Path, blobs: BlobStore, prepared: Prepared) -> FilesRestore:
    """Make the changes ``prepared`` plans, each only if its file still
    holds what the plan found (blocking IO)."""
    root = Workspace(workspace)
    restored: list[FileCheckpoint] = []
    skipped = list(prepared.skipped)
    for action, point in prepared.actions:
        try:
            _apply(root, blobs, action)
            restored.append(point)
        except _Skip as exc:
            skipped.append(FileSkipped(path=action.path, reason=str(exc)))
    return FilesRestore(restored=tuple(restored), skipped=tuple(skipped))


def restore(workspace: Path, blobs: BlobStore, points: list[FileCheckpoint]) -> FilesRestore:
    """Undo the changes ``points`` record (blocking IO), with no intent
    logged in between: :func:`prepare` then :func:`carry_out`."""
    return carry_out(workspace, blobs, prepare(workspace, blobs, points))


async def logged_restore(
    recorder: EventRecorder,
    thread_id: str,
    points: list[FileCheckpoint],
    *,
    before_turn_id: str | None = None,
    rewind_seq: int | None = None,
    imported: Collection[str] = frozenset(),
) -> FilesRestore:
    """Undo ``points`` in the thread's workspace with the intent recorded
    (durably) between planning and the first change; the caller records
    the outcome (a rewind's ``before_turn_id``, an undo's ``rewind_seq``).
    Files in ``imported`` are only reported."""
    state = recorder.state(thread_id)
    workspace = _workspace(state)
    blobs = recorder.store.blobs(thread_id)
    prepared = await anyio.to_thread.run_sync(prepare, workspace, blobs, points, imported)
    if prepared.actions:
        planned, skipped = prepared.intent()
        await recorder.record(
            thread_id,
            draft(
                FilesRestoreStarted,
                before_turn_id=before_turn_id,
                rewind_seq=rewind_seq,
                planned=planned,
                skipped=skipped,
            ),
        )
    return await anyio.to_thread.run_sync(carry_out, workspace, blobs, prepared)


def describe_restore(done: object, *, undo: bool = False) -> list[str]:
    """What a restore did (``done``: a :class:`FilesRestore`, else nothing was
    asked of the files), as lines for the CLI and the session: a summary
    that says what is not tracked, then one line per file."""
    if not isinstance(done, FilesRestore):
        return []
    verb = "put back" if undo else "restored"
    if not done.restored and not done.skipped:
        head = "files: nothing to put back" if undo else "files: nothing to restore"
        return [f"{head} ({UNTRACKED_NOTE})"]
    lines = [
        f"files: {verb} {len(done.restored)}, left alone {len(done.skipped)} ({UNTRACKED_NOTE})"
    ]
    for point in done.restored:
        what = "removed (kun had created it)" if point.after_sha256 is None else verb
        lines.append(f"  {point.path}: {what}")
    lines.extend(f"  {skip.path}: NOT {verb}: {skip.reason}" for skip in done.skipped)
    return lines


def disk_hashes(workspace: Path, paths: list[str]) -> dict[str, str | None]:
    """Each file's SHA-256 now (``None``: absent; :data:`NOT_A_FILE` for
    anything else, or when the workspace is not a directory)."""
    if not workspace.is_dir():
        return dict.fromkeys(paths, NOT_A_FILE)
    root = Workspace(workspace)
    return {path: _disk_sha(root, path) for path in paths}


class _Skip(Exception):
    """An action that no longer holds; the message says why."""


def _disk_sha(root: Workspace, path: str) -> str | None:
    """The SHA-256 of the regular file at ``path``, ``None`` if there is no
    file, :data:`NOT_A_FILE` if something else is there or it cannot be read."""
    try:
        with root.locate(path) as where:
            if where.name is None:
                return NOT_A_FILE
            data = _read(where.dir_fd, where.name)
    except ToolError as exc:
        return None if exc.code == "not_found" else NOT_A_FILE
    except (_Skip, OSError):
        return NOT_A_FILE
    return None if data is None else hashlib.sha256(data).hexdigest()


def _read(dir_fd: int, name: str) -> bytes | None:
    """The regular file's content, ``None`` if absent; :class:`_Skip` if it
    is not a regular file or cannot be read."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _Skip(f"cannot be read ({exc.strerror}); left as it is") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Skip("no longer a regular file; left as it is")
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read()
    finally:
        os.close(fd)


def _save(root: Workspace, blobs: BlobStore, action: RestoreAction) -> FileCheckpoint:
    """Save what the file holds if it still hashes as planned; the
    checkpoint of the change ``action`` will make."""
    try:
        with root.locate(action.path) as where:
            if where.name is None:
                raise _Skip("no longer a regular file; left as it is")
            current = _read(where.dir_fd, where.name)
    except ToolError as exc:
        if exc.code != "not_found":
            raise _Skip(f"{exc.message} Left as it is.") from exc
        current = None
    except OSError as exc:
        raise _Skip(f"could not be read ({exc.strerror}); left as it is") from exc
    now = None if current is None else hashlib.sha256(current).hexdigest()
    if now != action.expected:
        raise _Skip("changed while the rewind ran; left as it is")
    saved = None if current is None else blobs.put(current)
    after = None if action.content is None else action.content.sha256
    return FileCheckpoint(path=action.path, before=saved, after_sha256=after)


def _apply(root: Workspace, blobs: BlobStore, action: RestoreAction) -> None:
    """Carry out ``action`` if the file still hashes as planned."""
    try:
        content = None if action.content is None else blobs.get(action.content)
    except BlobError as exc:
        raise _Skip(f"its saved content cannot be read ({exc.reason}); left as it is") from exc
    try:
        with root.locate(action.path, create_parents=content is not None) as where:
            if where.name is None:
                raise _Skip("no longer a regular file; left as it is")
            current = _read(where.dir_fd, where.name)
            now = None if current is None else hashlib.sha256(current).hexdigest()
            if now != action.expected:
                raise _Skip("changed while the rewind ran; left as it is")
            if content is None:
                os.unlink(where.name, dir_fd=where.dir_fd)
            else:
                replace_file(where.dir_fd, where.name, content)
    except ToolError as exc:
        raise _Skip(f"{exc.message} Left as it is.") from exc
    except OSError as exc:
        raise _Skip(f"could not be restored ({exc.strerror}); left as it is") from exc


async def rewind_files(
    recorder: EventRecorder, thread_id: str, before_turn_id: str
) -> FilesRestore:
    """Put the files back as they were before ``before_turn_id``: undo every
    change the log records since it started
    (:func:`~kun.domain.checkpoints.file_changes`). Read from the log, not
    the projection: a turn interrupted with ``discard`` keeps no items, but
    its changes are on disk. Changes recorded before an import are left
    alone (:func:`~kun.domain.checkpoints.imported_paths`)."""
    await recorder.flush(thread_id)
    state = recorder.state(thread_id)
    start = next(t.started_seq for t in state.turns if t.turn_id == before_turn_id)
    store = recorder.store

    def changes() -> tuple[list[FileCheckpoint], frozenset[str]]:
        events = list(store.read(thread_id, after=start - 1))
        points = with_side_threads(store, thread_id, events)
        return points, imported_paths(events, state.imported_through)

    points, imported = await anyio.to_thread.run_sync(changes)
    return await logged_restore(
        recorder, thread_id, points, before_turn_id=before_turn_id, imported=imported
    )


def with_side_threads(
    store: EventStore, thread_id: str, events: list[Event]
) -> list[FileCheckpoint]:
    """:func:`~kun.domain.checkpoints.file_changes` of ``events``, with the
    changes of the side threads their ``delegate_task`` calls ran in
    (:mod:`kun.runtime.delegation`): a sub-agent's edits are part of the
    call, so a rewind puts them back too. The side files those changes
    need are copied into this thread's, so a restore reads them from here
    like its own. Blocking (it reads logs)."""
    blobs = store.blobs(thread_id)

    def side(child: str) -> list[FileCheckpoint]:
        try:
            child_events = list(store.read(child, mode="tolerant"))
        except ThreadNotFound:
            return []
        copy_side_files(child_events, store.blobs(child), blobs)
        return with_side_threads(store, child, child_events)

    return file_changes(events, side)


async def undo_rewind_files(
    recorder: EventRecorder, thread_id: str, rewind_seq: int
) -> FilesRestore | None:
    """Undo what the rewind at ``rewind_seq`` did to the files; ``None`` if
    it did nothing to them or is already undone."""
    state = recorder.state(thread_id)
    rewind = next((r for r in state.rewinds if r.seq == rewind_seq), None)
    if rewind is None or not isinstance(rewind.files, FilesRestore):
        return None
    if rewind.undone_at_seq is not None:
        return None
    points = list(rewind.files.restored)
    here = not isinstance(state.imported_through, int) or rewind_seq > state.imported_through
    imported = frozenset() if here else frozenset(tracked_paths(points))
    return await logged_restore(
        recorder, thread_id, points, rewind_seq=rewind_seq, imported=imported
    )


def _workspace(state: ThreadState) -> Path:
    return Path(state.settings.workspace or ".")
