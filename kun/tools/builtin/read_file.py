"""``read_file``: a text file's lines, numbered, optionally a range of them.

Output lines are ``<number>\\t<text>`` (1-based, like ``cat -n``) so the model
can cite and edit by line. The output is capped at :data:`MAX_OUTPUT_BYTES`
and each line at :data:`MAX_LINE_CHARS`; a cut says where it happened and how
to read on. Lines are split on ``\\n`` only (never on U+2028 and friends), and
the file is decoded as UTF-8 with replacement, so a stray Latin-1 byte does
not make a text file unreadable.

The file is read in chunks of :data:`CHUNK_BYTES`, so memory is bounded
whatever its shape: a cut line is measured, not kept, and at most
:data:`MAX_READ_BYTES` are read from ``start_line`` on (a line longer than
that ends the output with a note saying where to continue). Only a regular
file is read; it is opened beneath the workspace root
(:meth:`~kun.tools.workspace.Workspace.open_file`), never through a symlink
swapped in after the check, and never blocking (a FIFO is refused).

A binary file (a NUL byte in its first 8 KB) is refused readably, except an
image (PNG, JPEG, GIF, WebP by signature) of at most :data:`MAX_IMAGE_BYTES`,
which is returned as an attachment the model can look at.
"""

from __future__ import annotations

import codecs
import os
from typing import Any

from kun.contracts.images import sniff_image_type
from kun.contracts.items import Attachment
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.builtin._common import (
    BINARY_SNIFF_BYTES,
    check_cancelled,
    clip_line,
    looks_binary,
    off_loop,
)
from kun.tools.errors import InvalidArguments, ToolError
from kun.tools.workspace import OpenFile, Workspace

MAX_OUTPUT_BYTES = 64 * 1024
MAX_LINE_CHARS = 2000
MAX_IMAGE_BYTES = 5 * 1024 * 1024
CHUNK_BYTES = 64 * 1024
KEEP_BYTES = MAX_LINE_CHARS * 4
"""Bytes of a line kept to show it: enough for its first
:data:`MAX_LINE_CHARS` characters in any UTF-8. The rest is only measured."""
MAX_READ_BYTES = 8 * 1024 * 1024
"""Bytes read from ``start_line`` on, in one call: ample for the output cap,
and what measuring a cut line may cost. Lines before ``start_line`` are
counted, not kept, so reaching them costs time but no memory."""
NAME = "read_file"

SPEC = make_spec(
    NAME,
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
    with workspace.open_file(path, NAME) as file:
        head = os.pread(file.fd, BINARY_SNIFF_BYTES, 0)
        if looks_binary(head) or sniff_image_type(head):
            return _binary(file, head)
        return _lines(_Chunks(file.fd), file.shown, start, end)


class _Chunks:
    """The file's bytes in chunks of :data:`CHUNK_BYTES`, a chunk at a time:
    memory stays bounded whatever the file's shape. ``read`` counts the bytes
    handed out since the counter was last reset."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.read = 0

    def next(self) -> bytes:
        check_cancelled()
        data = os.read(self.fd, CHUNK_BYTES)
        self.read += len(data)
        return data


def _skip(chunks: _Chunks, start: int) -> tuple[int, bytes]:
    """Read past the first ``start - 1`` lines, counting newlines only: the
    number of lines passed and the bytes read after the last of them (empty
    at the end of the file, when the count includes a last unterminated
    line)."""
    passed = 0
    data = chunks.next()
    while data and passed < start - 1:
        newlines = data.count(b"\n")
        if passed + newlines >= start - 1:
            at = -1
            for _ in range(start - 1 - passed):
                at = data.index(b"\n", at + 1)
            return start - 1, data[at + 1 :] or chunks.next()
        passed += newlines
        last = data
        data = chunks.next()
        if not data and not last.endswith(b"\n"):
            passed += 1
    return passed, data


def _line(chunks: _Chunks, data: bytes) -> tuple[bytes, int | None, bytes]:
    """The line that ``data`` starts: its first :data:`KEEP_BYTES` bytes, its
    length in characters without the ``\\r`` of a CRLF ending (``None`` when
    the read budget ran out before its end), and the bytes after it."""
    kept = bytearray()
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    chars = 0
    while data:
        cut = data.find(b"\n")
        piece = data if cut < 0 else data[:cut]
        if len(kept) < KEEP_BYTES:
            kept += piece[: KEEP_BYTES - len(kept)]
        chars += len(decoder.decode(piece))
        if cut >= 0:
            chars += len(decoder.decode(b"", final=True))
            return bytes(kept), chars - piece.endswith(b"\r"), data[cut + 1 :]
        if chunks.read > MAX_READ_BYTES:
            return bytes(kept), None, b""
        data = chunks.next()
    return bytes(kept), chars + len(decoder.decode(b"", final=True)), b""


def _lines(chunks: _Chunks, shown: str, start: int, end: int | None) -> ToolOutput:
    passed, data = _skip(chunks, start)
    chunks.read = len(data)
    out: list[str] = []
    size = 0
    number = passed
    while data and (end is None or number < end):
        number += 1
        raw, chars, data = _line(chunks, data)
        text = raw.decode("utf-8", "replace").rstrip("\r")
        line = f"{number}\t{_clip(text, chars)}\n"
        size += len(line.encode())
        if size > MAX_OUTPUT_BYTES and out:
            out.append(_cut_note(number))
            break
        out.append(line)
        if chars is None:
            out.append(_budget_note(number))
            break
        if not data:
            data = chunks.next()
    if out:
        return ToolOutput(output="".join(out))
    if number == 0:
        return ToolOutput(output=f"({shown} is empty)")
    return ToolOutput(output=f"({shown} has {number} lines; start_line {start} is past the end)")


def _clip(text: str, chars: int | None) -> str:
    if chars is None:
        return (
            f"{text[:MAX_LINE_CHARS]}... [line cut at {MAX_LINE_CHARS} characters; it is "
            f"longer than the {MAX_READ_BYTES // (1024 * 1024)} MB read_file reads per call]"
        )
    if chars > len(text):
        text = text[:MAX_LINE_CHARS]
        return f"{text}... [line cut at {MAX_LINE_CHARS} of {chars} characters]"
    return clip_line(text, MAX_LINE_CHARS)


def _cut_note(number: int) -> str:
    return (
        f"[output cut at {MAX_OUTPUT_BYTES // 1024} KB after line {number - 1}; "
        f"continue with start_line={number}]"
    )


def _budget_note(number: int) -> str:
    return (
        f"[read_file stops here: line {number} is too long to read whole; "
        f"continue with start_line={number + 1}, or look inside it with bash]"
    )


def _binary(file: OpenFile, head: bytes) -> ToolOutput:
    shown, real = file.shown, file.real
    size = os.fstat(file.fd).st_size
    mime = sniff_image_type(head)
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
