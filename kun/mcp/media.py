"""Images an MCP tool returned, as attachments of its result.

An ``image`` content block is base64 in the ``tools/call`` answer. Kept as
text it would cost the model thousands of tokens of noise and the log a
line as big as the picture; so it is decoded, written once to the home's
uploads (``<home>/uploads/<thread>/mcp-<sha256>.<ext>``, where the HTTP API
keeps the images people send) and becomes an attachment of the tool result,
which the model reads as an image like ``read_file``'s (and a model that
takes no images reads as a note; :mod:`kun.model.request.images`). The
result's text says it is attached. When the result is recorded its bytes
become a side file of the thread (:func:`kun.runtime.sidefiles.keep_attachments`),
which is what every later request sends; the copy here is only where it
came from.

What is not attached stays a line naming it: a type providers do not take
(only PNG, JPEG, GIF and WebP whose bytes say so), an image over
``read_file``'s limit, bad base64, or a host without a place to keep it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kun.contracts.images import sniff_image_type
from kun.contracts.items import Attachment
from kun.tools.builtin.read_file import MAX_IMAGE_BYTES

__all__ = ["save_images"]

_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
}


def save_images(content: Sequence[Any], folder: Path) -> dict[int, Attachment]:
    """The image blocks of ``content`` that can be attached, by their index,
    each written to ``folder`` (durably, once per content) first. Blocking:
    run it in a worker thread."""
    saved: dict[int, Attachment] = {}
    for index, block in enumerate(content):
        if getattr(block, "type", None) != "image":
            continue
        try:
            data = base64.b64decode(block.data, validate=True)
        except (binascii.Error, ValueError):
            continue
        mime = sniff_image_type(data)
        if mime is None or len(data) > MAX_IMAGE_BYTES:
            continue
        name = f"mcp-{hashlib.sha256(data).hexdigest()}{_EXTENSIONS[mime]}"
        path = folder / name
        if not path.is_file() or path.stat().st_size != len(data):
            _write(folder, name, data)
        saved[index] = Attachment(name=name, mime_type=mime, path=str(path), size_bytes=len(data))
    return saved


def _write(folder: Path, name: str, data: bytes) -> None:
    """Written whole or not at all, and on disk before the result naming it
    is recorded."""
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{name}.{os.getpid()}.tmp"
    with open(temporary, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, folder / name)
