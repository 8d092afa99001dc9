"""``grep``: lines matching a regular expression, as ``path:line: text``.

The search runs in ripgrep (:mod:`kun.tools.builtin._rg`, which says why and
what it skips): linear time whatever the pattern, and killed the moment the
call is aborted. So the pattern is ripgrep's (Rust) regex syntax: Python's
for everyday use (classes, ``\\b``, ``(?i)``, groups, repetition), but with no
look-around and no backreferences, and a pattern that does not compile is
``invalid_arguments`` with ripgrep's message.

Lines are split on ``\\n`` only. The optional ``glob`` filter (ripgrep's
glob, gitignore style) matches a file's name when it has no ``/`` (``*.py``
finds Python files at any depth) and its path relative to ``path``
otherwise; it applies when ``path`` is a directory. Binary files (a NUL byte
where ripgrep looks, the first 8 KB of a file given by path), files over
:data:`MAX_FILE_BYTES`, files ignored by ``.gitignore`` and version-control
directories are skipped. At most :data:`MAX_MATCHES` lines, each cut at
:data:`MAX_LINE_CHARS` characters.
"""

from __future__ import annotations

import os
from typing import Any

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin import _rg
from kun.tools.builtin._common import BINARY_SNIFF_BYTES, clip_line, looks_binary, plural
from kun.tools.workspace import Workspace

NAME = "grep"
MAX_MATCHES = 200
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_COLUMNS = 64 * 1024
"""Bytes of a matching line ``rg`` prints: a longer one is cut (and said to
be) without being measured."""
_RG_CUT = b" [... omitted end of long line]"

SPEC = make_spec(
    NAME,
    "Search file contents with a regular expression (ripgrep's Rust syntax: like Python's "
    "re, but no look-around or backreferences). Returns matching lines as "
    "'path:line: text'. Limit the search with path (a file or directory) and glob "
    "(e.g. '*.py', or 'src/**/*.ts' to match the path). "
    f"At most {MAX_MATCHES} matches, lines cut at {MAX_LINE_CHARS} characters. Skips "
    "binary files, .git, and files ignored by .gitignore (name an ignored directory as "
    "path to search it).",
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
        ignore_case = bool(args.get("ignore_case"))
        await _rg.check_regex(pattern, ignore_case=ignore_case)
        flags = ["--ignore-case"] if ignore_case else []
        filter_glob: str | None = args.get("glob")
        if filter_glob:
            await _rg.check_glob(filter_glob.removeprefix("./"), filter_glob)
            flags += ["--glob", filter_glob.removeprefix("./")]
        flags += ["--regexp", pattern]
        workspace = Workspace(ctx.workspace)
        target = await _rg.open_target(workspace, args.get("path", "."), NAME)
        try:
            return await _grep(target, flags)
        finally:
            os.close(target.fd)


async def _grep(target: _rg.Target, flags: list[str]) -> ToolOutput:
    if not target.is_dir:
        skipped = _skipped_file(target)
        if skipped is not None:
            return ToolOutput(output=skipped)
    hits: list[str] = []
    prefix = "" if target.shown == "." else f"{target.shown}/"

    def take(record: bytes) -> bool:
        path, sep, rest = record.partition(b"\0")
        number, colon, text = rest.partition(b":")
        if not sep or not colon or not number.isdigit():
            return True
        shown = target.shown if not target.is_dir else prefix + _relative(path)
        hits.append(f"{shown}:{int(number)}: {_text(text)}")
        return len(hits) <= MAX_MATCHES

    args = [
        *_rg.COMMON_ARGS,
        "--no-heading",
        "--with-filename",
        "--line-number",
        "--null",
        f"--max-columns={MAX_COLUMNS}",
        "--max-columns-preview",
        f"--max-filesize={MAX_FILE_BYTES}",
        *flags,
        *_rg.SKIP_VCS,
    ]
    outcome = await _rg.run(args, target=target, separator=b"\n", take=take)
    notes: list[str] = []
    if len(hits) > MAX_MATCHES:
        notes.append(f"[stopped at {MAX_MATCHES} matches; narrow the pattern, path or glob]")
    if outcome.error is not None:
        notes.append(f"[some files could not be searched: {outcome.error}]")
    if not hits:
        return ToolOutput(output="\n".join(["No matches.", *notes]))
    return ToolOutput(output="\n".join([*hits[:MAX_MATCHES], *notes]))


def _skipped_file(target: _rg.Target) -> str | None:
    """Why a file given by path is not searched (binary, too large), or
    ``None``: ripgrep searches whatever it is handed explicitly."""
    size = os.fstat(target.fd).st_size
    if size > MAX_FILE_BYTES:
        return (
            f"No matches: {target.shown} is {plural(size, 'byte')}, over the "
            f"{MAX_FILE_BYTES // (1024 * 1024)} MB grep searches; use bash for it."
        )
    if looks_binary(os.pread(target.fd, BINARY_SNIFF_BYTES, 0)):
        return f"No matches: {target.shown} is a binary file; grep searches text."
    return None


def _relative(path: bytes) -> str:
    return path.decode("utf-8", "replace").removeprefix("./")


def _text(raw: bytes) -> str:
    if len(raw) >= MAX_COLUMNS and raw.endswith(_RG_CUT):
        text = raw[: -len(_RG_CUT)].decode("utf-8", "replace")
        return (
            f"{text[:MAX_LINE_CHARS]}... [line cut at {MAX_LINE_CHARS} characters; it is "
            f"over {MAX_COLUMNS // 1024} KB]"
        )
    return clip_line(raw.decode("utf-8", "replace").rstrip("\r"), MAX_LINE_CHARS)
