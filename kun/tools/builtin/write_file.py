"""``write_file``: create or overwrite a file with the given text (UTF-8),
creating missing parent directories. Reports the bytes written and whether
the file is new.

The write is atomic (:mod:`kun.tools.atomic`): a crash leaves the old content
or the new one, never an empty or half-written file, and an existing file
keeps its permission bits. Only a regular file is replaced: a directory, a
FIFO or a device at the path is refused, never opened (opening a FIFO blocks
until someone reads it). The path is used through descriptors beneath the
workspace root (:meth:`~kun.tools.workspace.Workspace.locate`), so a symlink
swapped in after the check cannot redirect the write out of the workspace.

The write runs in a worker thread that is *not* abandoned on cancellation:
an abort waits for the (bounded) write to finish. The result carries the
change as a diff (:mod:`kun.tools.preview`), for people: the model reads only
the one-line report.

Before the file is touched, what it held (or that it did not exist) is saved
as a side file through the context's ``save_side_file``, and the result
carries the :class:`~kun.contracts.items.FileCheckpoint`, so ``kun rewind
--files`` can put it back. A content that cannot be saved leaves the file
unchanged (``checkpoint_failed``): a change kun could not undo is not made.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from typing import Any

from kun.contracts.items import BlobRef, FileCheckpoint
from kun.tools.atomic import replace_file
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin._common import off_loop, plural
from kun.tools.errors import ToolError
from kun.tools.preview import change_diff, read_capped
from kun.tools.workspace import Workspace, file_kind, not_a_file

NAME = "write_file"
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

SPEC = make_spec(
    NAME,
    "Create a file, or replace a file's whole content, with the given text (UTF-8). "
    "Missing parent directories are created. To change part of an existing file, prefer "
    "edit_file.",
    {
        "path": {"type": "string", "description": "File path, relative to the workspace root."},
        "content": {"type": "string", "description": "The complete new content."},
    },
    required=["path", "content"],
)


class WriteFile:
    spec = SPEC
    effect: ToolEffect = "write"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        workspace = Workspace(ctx.workspace)
        path: str = args["path"]
        content: str = args["content"]
        save = ctx.save_side_file
        return await off_loop(
            lambda: _write(workspace, path, content, save), abandon_on_cancel=False
        )


SaveSideFile = Callable[[bytes], BlobRef]


def checkpoint(
    save: SaveSideFile | None, shown: str, before: bytes | None, after: bytes
) -> FileCheckpoint | None:
    """Save ``before`` (``None``: no file) as a side file and return the
    checkpoint of the change to ``after``; ``None`` without a side-file
    store. Raises ``checkpoint_failed`` if the content cannot be saved."""
    if save is None:
        return None
    try:
        ref = None if before is None else save(before)
    except OSError as exc:
        raise ToolError(
            "checkpoint_failed",
            f"{shown} was not changed: its current content could not be saved for "
            f"kun rewind --files ({exc}).",
        ) from exc
    return FileCheckpoint(path=shown, before=ref, after_sha256=hashlib.sha256(after).hexdigest())


def _write(workspace: Workspace, path: str, content: str, save: SaveSideFile | None) -> ToolOutput:
    data = content.encode("utf-8")
    with workspace.locate(path, create_parents=True) as where:
        if where.name is None:
            raise not_a_file(where.shown, "a directory", NAME)
        try:
            mode = os.stat(where.name, dir_fd=where.dir_fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            raise not_a_file(where.shown, file_kind(mode), NAME)
        whole = save is not None
        before = None if mode is None else _read_before(where.dir_fd, where.name, whole=whole)
        saved = checkpoint(save, where.shown, before, data)
        existed = replace_file(where.dir_fd, where.name, data)
    what = "replaced its content" if existed else "created it"
    return ToolOutput(
        output=f"Wrote {plural(len(data), 'byte')} to {where.shown} ({what}).",
        diff=change_diff(where.shown, before if existed else None, data),
        checkpoint=saved,
    )


def _read_before(dir_fd: int, name: str, *, whole: bool) -> bytes | None:
    """What the file held (all of it for a checkpoint, else capped: enough
    to diff), ``None`` if it went away."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not whole:
            return read_capped(fd)
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read()
    finally:
        os.close(fd)
