"""``edit_file``: replace an exact piece of text in a file.

``old_string`` must match exactly (whitespace and indentation included) and,
unless ``replace_all`` is set, exactly once: a missing match and an
ambiguous one are errors (``edit_no_match``, ``edit_ambiguous``) that say how
many matches there were and what to do, so the model re-reads or adds
context instead of guessing. A file with CRLF line endings matches an
``old_string`` written with ``\\n`` and keeps its CRLF endings.

The file is read and rewritten through descriptors beneath the workspace
root, and the rewrite is atomic, like ``write_file``'s (:mod:`kun.tools.atomic`);
only a regular file is edited. The write is not abandoned on cancellation.
The result carries the change as a diff (:mod:`kun.tools.preview`), for
people: the model reads only the one-line report, and the checkpoint that
lets ``kun rewind --files`` undo it (saved before the rewrite, as
``write_file`` does).
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from kun.tools.atomic import replace_file
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin._common import looks_binary, off_loop, plural
from kun.tools.builtin.write_file import SaveSideFile, checkpoint
from kun.tools.errors import InvalidArguments, ToolError
from kun.tools.preview import change_diff
from kun.tools.workspace import OpenFile, Workspace

NAME = "edit_file"
MAX_EDIT_BYTES = 64 * 1024 * 1024
"""The largest file edit_file takes: an edit holds the whole text (twice)
in memory, so a larger file is refused before it is read."""

SPEC = make_spec(
    NAME,
    "Replace text in a file. old_string must match the file exactly, including whitespace "
    "and indentation (copy it from read_file output without the line-number prefix), and "
    "must occur exactly once unless replace_all is true; include surrounding lines to make "
    "it unique. Fails, saying how many matches were found, when the match is missing or "
    "ambiguous.",
    {
        "path": {"type": "string", "description": "File path, relative to the workspace root."},
        "old_string": {"type": "string", "minLength": 1, "description": "Exact text to find."},
        "new_string": {"type": "string", "description": "Replacement text."},
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence. Default: false.",
        },
    },
    required=["path", "old_string", "new_string"],
)


class EditFile:
    spec = SPEC
    effect: ToolEffect = "write"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        old: str = args["old_string"]
        new: str = args["new_string"]
        if old == new:
            raise InvalidArguments("old_string and new_string are the same; nothing to change.")
        workspace = Workspace(ctx.workspace)
        path: str = args["path"]
        replace_all = bool(args.get("replace_all", False))
        save = ctx.save_side_file
        return await off_loop(
            lambda: _edit(workspace, path, old, new, replace_all=replace_all, save=save),
            abandon_on_cancel=False,
        )


def _edit(
    workspace: Workspace,
    path: str,
    old: str,
    new: str,
    *,
    replace_all: bool,
    save: SaveSideFile | None = None,
) -> ToolOutput:
    try:
        with workspace.open_file(path, NAME) as file:
            return _edit_open(file, old, new, replace_all=replace_all, save=save)
    except ToolError as exc:
        if exc.code == "not_found":
            shown = workspace.relative(workspace.resolve(path))
            raise ToolError(
                "not_found", f"{shown} does not exist; use write_file to create it."
            ) from None
        raise


def _edit_open(
    file: OpenFile, old: str, new: str, *, replace_all: bool, save: SaveSideFile | None
) -> ToolOutput:
    shown = file.shown
    text = _read_text(file.fd, shown)
    done = replace_text(text, old, new, shown, replace_all=replace_all)
    before, after = text.encode("utf-8"), done.text.encode("utf-8")
    saved = checkpoint(save, shown, before, after)
    replace_file(file.dir_fd, file.name, after)
    where = f"first at line {done.line}" if done.occurrences > 1 else f"at line {done.line}"
    return ToolOutput(
        output=f"Edited {shown}: replaced {plural(done.occurrences, 'occurrence')} ({where}).",
        diff=change_diff(shown, before, after),
        checkpoint=saved,
    )


class Replacement(NamedTuple):
    text: str
    occurrences: int
    line: int


def replace_text(text: str, old: str, new: str, shown: str, *, replace_all: bool) -> Replacement:
    """``text`` with ``old`` replaced by ``new`` as the tool would (also
    used to preview the edit at an approval): the new text, how many
    occurrences and the line of the first; ``edit_no_match`` or
    ``edit_ambiguous`` when it would fail."""
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolError(
            "edit_no_match",
            f"old_string was not found in {shown} (0 matches). It must match exactly, "
            "including whitespace and indentation; read the file again and copy the text.",
        )
    if count > 1 and not replace_all:
        raise ToolError(
            "edit_ambiguous",
            f"old_string matches {count} places in {shown}. Include more surrounding lines "
            "so it matches exactly one, or set replace_all to true to change all of them.",
        )
    line = text[: text.index(old)].count("\n") + 1
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return Replacement(updated, count, line)


def _read_text(fd: int, shown: str) -> str:
    size = os.fstat(fd).st_size
    if size > MAX_EDIT_BYTES:
        raise ToolError(
            "file_too_large",
            f"{shown} is {plural(size, 'byte')}, over the {MAX_EDIT_BYTES // (1024 * 1024)} MB "
            "edit_file edits; change it with bash (sed, a script) instead.",
        )
    with os.fdopen(os.dup(fd), "rb") as f:
        data = f.read()
    if looks_binary(data):
        raise ToolError("binary_file", f"{shown} is a binary file; edit_file edits text only.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            "binary_file",
            f"{shown} is not valid UTF-8 (byte {exc.start}); edit_file edits UTF-8 text only.",
        ) from exc
