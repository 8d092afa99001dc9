"""``write_file``: create or overwrite a file with the given text (UTF-8),
creating missing parent directories. Reports the bytes written and whether
the file is new.

The write runs in a worker thread that is *not* abandoned on cancellation:
an abort waits for the write to finish, so a file is never left half-written
by kun itself.
"""

from __future__ import annotations

from typing import Any

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin._common import off_loop, plural
from kun.tools.errors import ToolError
from kun.tools.workspace import Workspace

SPEC = make_spec(
    "write_file",
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
        return await off_loop(lambda: _write(workspace, path, content), abandon_on_cancel=False)


def _write(workspace: Workspace, path: str, content: str) -> ToolOutput:
    real = workspace.resolve(path)
    shown = workspace.relative(real)
    if real.is_dir():
        raise ToolError("not_a_file", f"{shown} is a directory; give a file path.")
    existed = real.exists()
    real.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8")
    real.write_bytes(data)
    what = "replaced its content" if existed else "created it"
    return ToolOutput(output=f"Wrote {plural(len(data), 'byte')} to {shown} ({what}).")
