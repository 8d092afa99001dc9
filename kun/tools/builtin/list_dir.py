"""``list_dir``: the entries of one directory, sorted by name, ``/`` after
directories and ``@`` after symlinks (not followed, so a link pointing out of
the workspace reveals nothing beyond its name). At most :data:`MAX_ENTRIES`
are listed; a cut says how many were left out. The directory is opened
beneath the workspace root (:meth:`~kun.tools.workspace.Workspace.open_dir`),
so a symlink swapped in for it after the check is not followed."""

from __future__ import annotations

import os
from typing import Any

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin._common import off_loop
from kun.tools.workspace import Workspace

MAX_ENTRIES = 500

SPEC = make_spec(
    "list_dir",
    "List one directory of the workspace (not recursive), sorted by name. Directories end "
    f"with '/', symlinks with '@'. At most {MAX_ENTRIES} entries; use glob to find files "
    "deeper down.",
    {
        "path": {
            "type": "string",
            "description": "Directory, relative to the workspace root. Default: the root.",
        },
    },
)


class ListDir:
    spec = SPEC
    effect: ToolEffect = "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        workspace = Workspace(ctx.workspace)
        path: str = args.get("path", ".")
        return await off_loop(lambda: _list(workspace, path))


def _list(workspace: Workspace, path: str) -> ToolOutput:
    with workspace.open_dir(path) as where, os.scandir(where.dir_fd) as entries:
        names = sorted(_entry_name(e) for e in entries)
    shown = where.shown
    if not names:
        return ToolOutput(output=f"({shown} is empty)")
    lines = names[:MAX_ENTRIES]
    if len(names) > MAX_ENTRIES:
        lines.append(f"[{len(names) - MAX_ENTRIES} more entries not shown]")
    return ToolOutput(output="\n".join(lines))


def _entry_name(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name}@"
    if entry.is_dir(follow_symlinks=False):
        return f"{entry.name}/"
    return entry.name
