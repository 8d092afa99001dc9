"""``glob``: files whose path matches a pattern, sorted, capped.

The pattern is matched against each file's path relative to ``path`` (the
workspace root by default): ``*`` and ``?`` stay within a segment, ``**``
spans directories, ``{a,b}`` lists alternatives. Version-control directories
are skipped and symlinked directories not entered (see
:meth:`~kun.tools.workspace.Workspace.walk`). A pattern cannot climb out with
``..`` or name an absolute path outside the workspace.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin._common import compile_glob, off_loop
from kun.tools.errors import OutsideWorkspace, ToolError
from kun.tools.workspace import Workspace

MAX_RESULTS = 500
MAX_SCANNED = 200_000

SPEC = make_spec(
    "glob",
    "Find files by path pattern, e.g. '**/*.py' or 'src/**/test_*.{js,ts}'. '*' matches "
    "within one directory level, '**' across levels. Returns workspace-relative paths, "
    f"sorted, at most {MAX_RESULTS}. Skips .git.",
    {
        "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern."},
        "path": {
            "type": "string",
            "description": "Directory to search from, relative to the workspace root. "
            "Default: the root.",
        },
    },
    required=["pattern"],
)


class Glob:
    spec = SPEC
    effect: ToolEffect = "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        workspace = Workspace(ctx.workspace)
        pattern: str = args["pattern"]
        path: str = args.get("path", ".")
        return await off_loop(lambda: _glob(workspace, pattern, path))


def _glob(workspace: Workspace, pattern: str, path: str) -> ToolOutput:
    base = workspace.resolve(path)
    if not base.is_dir():
        raise ToolError("not_a_directory", f"{workspace.relative(base)} is not a directory.")
    regex = compile_glob(_relative_pattern(workspace, pattern))
    matches: list[str] = []
    scanned = 0
    for file in workspace.walk(base):
        scanned += 1
        if scanned > MAX_SCANNED:
            break
        if regex.match(file.relative_to(base).as_posix()):
            matches.append(workspace.relative(file))
    matches.sort()
    notes: list[str] = []
    if scanned > MAX_SCANNED:
        notes.append(f"[search stopped after {MAX_SCANNED} files; narrow path or pattern]")
    if len(matches) > MAX_RESULTS:
        notes.append(f"[{len(matches) - MAX_RESULTS} more matches not shown; narrow the pattern]")
    if not matches:
        return ToolOutput(output="\n".join([f"No files match {pattern!r}.", *notes]))
    return ToolOutput(output="\n".join([*matches[:MAX_RESULTS], *notes]))


def _relative_pattern(workspace: Workspace, pattern: str) -> str:
    pure = PurePosixPath(pattern)
    if pure.is_absolute():
        root = workspace.root.as_posix()
        if pattern.startswith(root + "/"):
            pattern = pattern[len(root) + 1 :]
            pure = PurePosixPath(pattern)
        else:
            raise OutsideWorkspace(
                f"The pattern {pattern!r} is outside the workspace {workspace.root}; "
                "give a pattern relative to the workspace root."
            )
    if ".." in pure.parts:
        raise OutsideWorkspace(
            f"The pattern {pattern!r} climbs out with '..'; patterns are relative to "
            f"the workspace {workspace.root} and stay inside it."
        )
    return pattern
