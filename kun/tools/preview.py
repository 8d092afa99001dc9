"""What a file write changes, as a unified diff a person can read.

Shown where a person decides or looks back: at an approval (the change a
``write_file`` / ``edit_file`` call *would* make, computed from the workspace
file and the call's arguments when the approval is asked), after the call
(the change it made, carried by its result) and in ``kun replay`` (both are
recorded, so a replay never reads the workspace).

A diff is kept small enough to live in an event: at most
:data:`MAX_DIFF_LINES` lines and :data:`MAX_DIFF_CHARS` characters, with a
last line saying how much was left out. A file over :data:`MAX_SOURCE_BYTES`,
binary content and a file that cannot be read give a one-line note in
parentheses instead of a diff (:func:`is_note`). CRLF endings are shown as
plain line ends (a carriage return would redraw the terminal's line).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import msgspec

from kun.tools.errors import ToolError
from kun.tools.workspace import Workspace

__all__ = [
    "MAX_DIFF_CHARS",
    "MAX_DIFF_LINES",
    "MAX_SOURCE_BYTES",
    "change_diff",
    "is_note",
    "proposed_diff",
    "read_capped",
    "summary",
]

MAX_DIFF_LINES = 200
MAX_DIFF_CHARS = 12_000
MAX_SOURCE_BYTES = 1024 * 1024
"""Content above this is not diffed (a line diff of megabytes is slow and
unreadable); the note gives the sizes."""

_FILE_TOOLS = ("write_file", "edit_file")


def looks_binary(data: bytes) -> bool:
    """git's rule, as the file tools use it: a NUL in the first 8 KB."""
    return b"\x00" in data[:8192]


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def is_note(diff: str) -> bool:
    """Whether ``diff`` is a one-line note rather than a diff."""
    return diff.startswith("(")


def change_diff(path: str, before: bytes | None, after: bytes) -> str:
    """The capped unified diff from ``before`` (``None``: no file) to
    ``after``, or a note when one side is binary or too large to diff."""
    size = plural(len(after), "byte")
    if before is not None and len(before) > MAX_SOURCE_BYTES:
        return f"(no diff: {path} is over {MAX_SOURCE_BYTES // 1024} KB; new content {size})"
    if len(after) > MAX_SOURCE_BYTES:
        return f"(no diff: the new content of {path} is {size})"
    if looks_binary(after) or (before is not None and looks_binary(before)):
        return f"(no diff: binary content; {path} would hold {size})"
    try:
        old = None if before is None else before.decode("utf-8")
        new = after.decode("utf-8")
    except UnicodeDecodeError:
        return f"(no diff: {path} is not UTF-8 text; it would hold {size})"
    if old == new:
        return f"(no change: {path} already holds this content)"
    return _unified(path, old, new)


def _unified(path: str, old: str | None, new: str) -> str:
    lines = difflib.unified_diff(
        [] if old is None else old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile=f"b/{path}",
    )
    kept: list[str] = []
    chars = 0
    total = 0
    for line in lines:
        if line.endswith("\r\n"):
            line = line[:-2] + "\n"
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        total += 1
        if len(kept) < MAX_DIFF_LINES and chars + len(line) <= MAX_DIFF_CHARS:
            kept.append(line)
            chars += len(line)
    if total > len(kept):
        kept.append(f"... ({total - len(kept)} more diff lines not shown)\n")
    return "".join(kept).rstrip("\n")


def read_capped(fd: int) -> bytes:
    """At most ``MAX_SOURCE_BYTES + 1`` bytes of an open file, from its start:
    enough to diff it or to know it is too large."""
    chunks: list[bytes] = []
    left = MAX_SOURCE_BYTES + 1
    offset = 0
    while left > 0:
        chunk = os.pread(fd, min(left, 1 << 16), offset)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def proposed_diff(root: Path, tool: str, arguments: bytes) -> str:
    """What the call would change in the workspace at ``root`` now: a diff,
    a note, or ``""`` for a call that is not a file write (or whose
    arguments are not an object)."""
    if tool not in _FILE_TOOLS:
        return ""
    try:
        args = msgspec.json.decode(arguments)
    except msgspec.DecodeError:
        return ""
    if not isinstance(args, dict) or not isinstance(args.get("path"), str):
        return ""
    try:
        return _proposed(Workspace(root), tool, args)
    except ToolError as exc:
        return f"(no diff: {exc.message})"
    except OSError as exc:
        return f"(no diff: {exc.strerror or exc})"


def _proposed(workspace: Workspace, tool: str, args: dict[str, Any]) -> str:
    from kun.tools.builtin.edit_file import replace_text

    path: str = args["path"]
    shown = workspace.relative(workspace.resolve(path))
    before = _current(workspace, path, tool)
    if tool == "write_file":
        content = args.get("content")
        if not isinstance(content, str):
            return ""
        return change_diff(shown, before, content.encode("utf-8"))
    old, new = args.get("old_string"), args.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str):
        return ""
    if before is None:
        return f"(no diff: {shown} does not exist; the edit will fail)"
    if len(before) > MAX_SOURCE_BYTES:
        return f"(no diff: {shown} is over {MAX_SOURCE_BYTES // 1024} KB)"
    try:
        text = before.decode("utf-8")
        if looks_binary(before):
            raise UnicodeError
    except UnicodeError:
        return f"(no diff: {shown} is binary or not UTF-8; the edit will fail)"
    try:
        done = replace_text(text, old, new, shown, replace_all=bool(args.get("replace_all")))
    except ToolError as exc:
        return f"(the edit will fail: {exc.message})"
    return change_diff(shown, before, done.text.encode("utf-8"))


def _current(workspace: Workspace, path: str, tool: str) -> bytes | None:
    try:
        with workspace.open_file(path, tool) as file:
            return read_capped(file.fd)
    except ToolError as exc:
        if exc.code == "not_found":
            return None
        raise


def summary(tool: str, arguments: bytes, width: int = 200) -> str:
    """One line naming the call: ``write_file src/a.py``, ``bash: git
    status``; the raw arguments, cut, for any other tool."""
    try:
        args = msgspec.json.decode(arguments)
    except msgspec.DecodeError:
        args = None
    if isinstance(args, dict):
        if tool in _FILE_TOOLS and isinstance(args.get("path"), str):
            return _cut(f"{tool} {args['path']}", width)
        if tool == "bash" and isinstance(args.get("command"), str):
            return _cut(f"bash: {' '.join(args['command'].split())}", width)
    return _cut(f"{tool} {arguments.decode('utf-8', 'replace')}", width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
