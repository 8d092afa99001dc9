"""``grep``: lines matching a regular expression, as ``path:line: text``.

Python regular expressions, searched line by line (lines split on ``\\n``
only). The optional ``glob`` filter matches a file's name when it has no
``/`` (``*.py`` finds Python files at any depth) and its path relative to
``path`` otherwise. Binary files (a NUL byte in the first 8 KB), files over
:data:`MAX_FILE_BYTES` and version-control directories are skipped. At most
:data:`MAX_MATCHES` lines, each cut at :data:`MAX_LINE_CHARS`. A pattern that
does not compile is ``invalid_arguments`` with the compiler's message.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin._common import clip_line, compile_glob, looks_binary, off_loop
from kun.tools.errors import InvalidArguments, ToolError
from kun.tools.workspace import Workspace

MAX_MATCHES = 200
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_SCANNED = 200_000

SPEC = make_spec(
    "grep",
    "Search file contents with a Python regular expression. Returns matching lines as "
    "'path:line: text'. Limit the search with path (a file or directory) and glob "
    "(e.g. '*.py', or 'src/**/*.ts' to match the path). "
    f"At most {MAX_MATCHES} matches, lines cut at {MAX_LINE_CHARS} characters. Skips "
    "binary files and .git.",
    {
        "pattern": {"type": "string", "minLength": 1, "description": "Regular expression."},
        "path": {
            "type": "string",
            "description": "File or directory to search, relative to the workspace root. "
            "Default: the root.",
        },
        "glob": {"type": "string", "description": "Only search files matching this glob."},
        "ignore_case": {"type": "boolean", "description": "Case-insensitive. Default: false."},
    },
    required=["pattern"],
)


class Grep:
    spec = SPEC
    effect: ToolEffect = "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern: str = args["pattern"]
        try:
            regex = re.compile(pattern, re.IGNORECASE if args.get("ignore_case") else 0)
        except re.error as exc:
            raise InvalidArguments(
                f"The pattern {pattern!r} is not a valid regular expression: {exc}. "
                "Escape special characters such as ( [ { . * + ? with a backslash."
            ) from exc
        filter_glob: str | None = args.get("glob")
        file_filter = compile_glob(filter_glob) if filter_glob else None
        by_name = filter_glob is not None and "/" not in filter_glob
        workspace = Workspace(ctx.workspace)
        path: str = args.get("path", ".")
        return await off_loop(lambda: _grep(workspace, path, regex, file_filter, by_name=by_name))


def _grep(
    workspace: Workspace,
    path: str,
    regex: re.Pattern[str],
    file_filter: re.Pattern[str] | None,
    *,
    by_name: bool,
) -> ToolOutput:
    base = workspace.resolve(path)
    if not base.exists():
        raise ToolError("not_found", f"{workspace.relative(base)} does not exist.")
    hits: list[str] = []
    scanned = 0
    for file in workspace.walk(base):
        if file_filter is not None:
            subject = file.name if by_name else file.relative_to(base).as_posix()
            if not file_filter.match(subject):
                continue
        scanned += 1
        if scanned > MAX_SCANNED:
            break
        _search(file, workspace.relative(file), regex, hits)
        if len(hits) > MAX_MATCHES:
            break
    notes: list[str] = []
    if len(hits) > MAX_MATCHES:
        notes.append(f"[stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob]")
    elif scanned > MAX_SCANNED:
        notes.append(f"[search stopped after {MAX_SCANNED} files; narrow path or glob]")
    if not hits:
        return ToolOutput(output="\n".join(["No matches.", *notes]))
    return ToolOutput(output="\n".join([*hits[:MAX_MATCHES], *notes]))


def _search(file: Path, shown: str, regex: re.Pattern[str], hits: list[str]) -> None:
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            return
        data = file.read_bytes()
    except OSError:
        return
    if looks_binary(data):
        return
    for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), start=1):
        if regex.search(line):
            text = clip_line(line.rstrip("\r"), MAX_LINE_CHARS)
            hits.append(f"{shown}:{number}: {text}")
            if len(hits) > MAX_MATCHES:
                return
