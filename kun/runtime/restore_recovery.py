"""Settling a file restore that kun was killed in the middle of.

A rewind that puts files back (or its undo) records its intent,
:class:`~kun.contracts.events.FilesRestoreStarted`, before it changes any
file, and its outcome (``thread_rewound`` / ``thread_rewind_undone`` with
``files``) after the last. Killed in between, the log holds an intent with
no outcome while the files are partly changed. The next writer to open the
thread settles it before anything else: it hashes each planned file and
records the outcome the restore would have recorded, exactly as the disk
says. A file holding what the restore meant to leave was restored (undoing
the rewind puts it back); one still holding what the plan found was not
reached; anything else was changed by someone else since. The last two are
reported and left as they are: settling never writes a file, so opening a
thread (``kun serve`` starting, a new turn) never changes the workspace
behind the user's back, and the user can undo the rewind and ask again.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from kun.contracts import events as ev
from kun.contracts.events import FileSkipped, FilesRestore
from kun.contracts.items import FileCheckpoint
from kun.domain.state import ThreadState
from kun.runtime.checkpoints import disk_hashes
from kun.runtime.context import draft
from kun.runtime.recorder import EventRecorder

__all__ = ["NOT_REACHED", "SOMEONE_ELSE", "restore_outcome", "settle_restore"]

NOT_REACHED = (
    "not restored: kun stopped before it got to this file; left as it was "
    "(undo the rewind and rewind again to restore it)"
)
SOMEONE_ELSE = "not restored: changed by someone else since kun stopped; left as it is"


def restore_outcome(intent: ev.FilesRestoreStarted, disk: dict[str, str | None]) -> FilesRestore:
    """What the restore ``intent`` did, given its files' hashes now (pure)."""
    restored: list[FileCheckpoint] = []
    skipped: list[FileSkipped] = list(intent.skipped)
    for point in intent.planned:
        now = disk.get(point.path)
        if now == point.after_sha256:
            restored.append(point)
        elif now == (None if point.before is None else point.before.sha256):
            skipped.append(FileSkipped(path=point.path, reason=NOT_REACHED))
        else:
            skipped.append(FileSkipped(path=point.path, reason=SOMEONE_ELSE))
    return FilesRestore(restored=tuple(restored), skipped=tuple(skipped))


def _outcome_event(intent: ev.FilesRestoreStarted, files: FilesRestore) -> ev.Event:
    if intent.rewind_seq is not None:
        event: ev.Event = draft(ev.ThreadRewindUndone, rewind_seq=intent.rewind_seq, files=files)
    else:
        event = draft(ev.ThreadRewound, before_turn_id=intent.before_turn_id, files=files)
    return event


async def settle_restore(recorder: EventRecorder, thread_id: str) -> bool:
    """Record the outcome of the thread's restore left without one, if any
    (its writer must hold the thread's lock); whether there was one."""
    state: ThreadState = recorder.state(thread_id)
    intent = state.restoring
    if not isinstance(intent, ev.FilesRestoreStarted):
        return False
    workspace = Path(state.settings.workspace or ".")
    paths = [p.path for p in intent.planned]
    disk = await anyio.to_thread.run_sync(disk_hashes, workspace, paths)
    await recorder.record(thread_id, _outcome_event(intent, restore_outcome(intent, disk)))
    return True
