"""``read_file``: a text file's lines, numbered, optionally a range of them.

Output lines are ``<number>\\t<text>`` (1-based, like ``cat -n``) so the model
can cite and edit by line. The output is capped at :data:`MAX_OUTPUT_BYTES`
and each line at :data:`MAX_LINE_CHARS`; a cut says where it happened and how
to read on. Lines are split on ``\\n`` only (never on U+2028 and friends), and
the file is decoded as UTF-8 with replacement, so a stray Latin-1 byte does
not make a text file unreadable.

A binary file (a NUL byte in its first 8 KB) is refused readably, except an
image (PNG, JPEG, GIF, WebP by signature) of at most :data:`MAX_IMAGE_BYTES`,
which is returned as an attachment the model can look at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

from kun.contracts.items import Attachment
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin._common import BINARY_SNIFF_BYTES, clip_line, looks_binary, off_loop
from kun.tools.errors import InvalidArguments, ToolError
from kun.tools.workspace import Workspace

MAX_OUTPUT_BYTES = 64 * 1024
MAX_LINE_CHARS = 2000
MAX_IMAGE_BYTES = 5 * 1024 * 1024

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

SPEC = make_spec(
    "read_file",
    "Read a text file in the workspace. Returns its lines numbered from 1 as "
    "'<number>\\t<text>'. Give start_line and/or end_line (1-based, inclusive) to "
    f"read part of a large file. Output is capped at {MAX_OUTPUT_BYTES // 1024} KB and "
    f"lines at {MAX_LINE_CHARS} characters; a cut output says where to continue. "
    "Binary files are refused; PNG, JPEG, GIF and WebP images are attached instead.",
    {
        "path": {"type": "string", "description": "File path, relative to the workspace root."},
        "start_line": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
        "end_line": {"type": "integer", "minimum": 1, "description": "Last line, inclusive."},
    },
    required=["path"],
)


class ReadFile:
    spec = SPEC
    effect: ToolEffect = "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        start = int(args.get("start_line", 1))
        end = int(args["end_line"]) if "end_line" in args else None
        if end is not None and end < start:
            raise InvalidArguments(f"end_line ({end}) is before start_line ({start}).")
        workspace = Workspace(ctx.workspace)
        path: str = args["path"]
        return await off_loop(lambda: _read(workspace, path, start, end))


def _read(workspace: Workspace, path: str, start: int, end: int | None) -> ToolOutput:
    real = workspace.resolve(path)
    shown = workspace.relative(real)
    if not real.exists():
        raise ToolError("not_found", f"{shown} does not exist.")
    if not real.is_file():
        raise ToolError("not_a_file", f"{shown} is not a file; use list_dir for directories.")
    with real.open("rb") as f:
        head = f.read(BINARY_SNIFF_BYTES)
        if looks_binary(head) or _image_type(head):
            return _binary(real, shown, head)
        f.seek(0)
        return _lines(f, shown, start, end)


def _lines(f: BinaryIO, shown: str, start: int, end: int | None) -> ToolOutput:
    out: list[str] = []
    size = 0
    seen = 0
    for number, raw in enumerate(f, start=1):
        seen = number
        if number < start:
            continue
        if end is not None and number > end:
            break
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        line = f"{number}\t{clip_line(text, MAX_LINE_CHARS)}\n"
        size += len(line.encode())
        if size > MAX_OUTPUT_BYTES and out:
            out.append(
                f"[output cut at {MAX_OUTPUT_BYTES // 1024} KB after line {number - 1}; "
                f"continue with start_line={number}]"
            )
            break
        out.append(line)
    if out:
        return ToolOutput(output="".join(out))
    if seen == 0:
        return ToolOutput(output=f"({shown} is empty)")
    return ToolOutput(output=f"({shown} has {seen} lines; start_line {start} is past the end)")


def _binary(real: Path, shown: str, head: bytes) -> ToolOutput:
    size = real.stat().st_size
    mime = _image_type(head)
    if mime is None:
        raise ToolError(
            "binary_file", f"{shown} is a binary file ({size} bytes); read_file shows text only."
        )
    if size > MAX_IMAGE_BYTES:
        raise ToolError(
            "binary_file",
            f"{shown} is an image of {size} bytes, over the {MAX_IMAGE_BYTES} byte limit.",
        )
    attachment = Attachment(name=real.name, mime_type=mime, path=str(real), size_bytes=size)
    return ToolOutput(
        output=f"{shown} is an image ({mime}, {size} bytes); it is attached.",
        attachments=(attachment,),
    )


def _image_type(head: bytes) -> str | None:
    for signature, mime in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None
