"""``glob``: files whose path matches a pattern, sorted, capped.

The pattern is matched against each file's path relative to ``path`` (the
workspace root by default): ``*`` and ``?`` stay within a segment, ``**``
spans directories, ``{a,b}`` lists alternatives, ``[...]`` is a class
(``[!...]`` negated). A pattern cannot climb out with ``..`` or name an
absolute path outside the workspace.

The walk and the match run in ripgrep (``rg --files``,
:mod:`kun.tools.builtin._rg`, which says what it skips): globs compile to
finite automata, so matching is linear in the path whatever the pattern,
and an abort kills the walk at once. Repeated ``**/`` are collapsed and the
pattern's length is bounded. Files ignored by ``.gitignore`` are left out
(give an ignored directory as ``path`` to list it); symlinks are not
followed and only regular files are listed.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath
from typing import Any

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin import _rg
from kun.tools.errors import InvalidArguments, OutsideWorkspace
from kun.tools.workspace import Workspace

NAME = "glob"
MAX_RESULTS = 500
MAX_PATTERN_CHARS = 1000
_REPEATED_STARS = re.compile(r"(?:\*\*/)+")

SPEC = make_spec(
    NAME,
    "Find files by path pattern, e.g. '**/*.py' or 'src/**/test_*.{js,ts}'. '*' matches "
    "within one directory level, '**' across levels. Returns workspace-relative paths, "
    f"sorted, at most {MAX_RESULTS}. Skips .git and files ignored by .gitignore (give an "
    "ignored directory as path to list it).",
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
        glob = _rg_glob(_relative_pattern(workspace, pattern))
        await _rg.check_glob(glob, pattern)
        flags = ["--glob", glob]
        target = await _rg.open_target(workspace, args.get("path", "."), NAME, dirs_only=True)
        try:
            return await _glob(target, pattern, flags)
        finally:
            os.close(target.fd)


async def _glob(target: _rg.Target, pattern: str, flags: list[str]) -> ToolOutput:
    prefix = "" if target.shown == "." else f"{target.shown}/"
    matches: list[str] = []
    more = 0

    def take(record: bytes) -> bool:
        nonlocal more
        if len(matches) < MAX_RESULTS:
            path = record.decode("utf-8", "replace").removeprefix("./")
            matches.append(prefix + path)
        else:
            more += 1
        return True

    args = [*_rg.COMMON_ARGS, "--files", "--null", *flags, *_rg.SKIP_VCS]
    outcome = await _rg.run(args, target=target, separator=b"\0", take=take)
    notes: list[str] = []
    if more:
        notes.append(f"[{more} more matches not shown; narrow the pattern]")
    if outcome.error is not None:
        notes.append(f"[some directories could not be read: {outcome.error}]")
    if not matches:
        return ToolOutput(output="\n".join([f"No files match {pattern!r}.", *notes]))
    return ToolOutput(output="\n".join([*matches, *notes]))


def _rg_glob(pattern: str) -> str:
    """The pattern as a ripgrep glob anchored at the search's start (a
    leading ``/``: without it, a pattern with no ``/`` would match a name at
    any depth), ``./`` dropped and repeated ``**/`` collapsed."""
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = _REPEATED_STARS.sub("**/", pattern)
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidArguments(
            f"The glob pattern is {len(pattern)} characters long, over the "
            f"{MAX_PATTERN_CHARS} allowed; use a shorter pattern."
        )
    return "/" + pattern


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
