"""Attachments as a model sees them: real images, or a bounded text fallback.

The type of an image is sniffed from its first bytes (PNG, JPEG, GIF, WebP
signatures), never taken from the file name or the declared MIME type: a
``.png`` that is really a JPEG would otherwise be sent with the wrong media
type and refused.

Bytes come from the attachment's side file, read and checked by the request
builder (a :class:`HeldAttachment`), or, for an attachment recorded before
side files held them, from an injected :data:`AttachmentLoader`, so request
building stays pure and testable; the composition root passes
:func:`read_attachment`. Without a loader, or when it
fails, the model gets a one-line note instead of the content.

For a user message (:meth:`AttachmentReader.for_user`):

* a model that takes images gets an :class:`Image` for every attachment that
  sniffs as one;
* anything else (a text-only model, or a file that is no image) becomes a
  text block naming the file — name, path, MIME type, pixel dimensions when
  the header gives them cheaply, size — followed by its base64. Content over
  ``limit`` bytes raises :class:`~kun.model.errors.AttachmentTooLarge`
  rather than flooding the context — for the request's own attachments.
  An attachment already in the history (``strict=False``) becomes a note
  saying it was not sent instead: it was accepted when it was attached (the
  TurnService refuses an oversized non-image then), and only a later change
  of model makes it too large; refusing it would refuse every later request
  of the thread.

For a tool result (:meth:`AttachmentReader.for_tool`): images for models that
take them; otherwise ``(image omitted)`` (or a note naming a non-image file).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import msgspec

from kun.contracts.images import sniff_image_type
from kun.contracts.items import Attachment
from kun.model.errors import AttachmentTooLarge

__all__ = [
    "DEFAULT_FALLBACK_LIMIT",
    "IMAGE_OMITTED",
    "AttachmentLoader",
    "AttachmentReader",
    "HeldAttachment",
    "Image",
    "image_dimensions",
    "read_attachment",
    "sniff_image_type",
]

AttachmentLoader = Callable[[Attachment], bytes]
"""Returns an attachment's bytes; raises ``OSError`` when it cannot."""

DEFAULT_FALLBACK_LIMIT = 32 * 1024
"""Largest file (in bytes) sent base64-encoded as text: ~43 K characters."""

IMAGE_OMITTED = "(image omitted)"

_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


class Image(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An image ready to send: its sniffed media type and base64 data."""

    media_type: str
    data: str
    name: str = ""

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"


def image_dimensions(data: bytes, media_type: str) -> tuple[int, int] | None:
    """``(width, height)`` from the image header, when it is cheap to read."""
    try:
        if media_type == "image/png" and data[12:16] == b"IHDR":
            return _be(data, 16, 4), _be(data, 20, 4)
        if media_type == "image/gif":
            return _le(data, 6, 2), _le(data, 8, 2)
        if media_type == "image/webp":
            return _webp_dimensions(data)
        if media_type == "image/jpeg":
            return _jpeg_dimensions(data)
    except IndexError:
        return None
    return None


class HeldAttachment(Attachment, frozen=True, kw_only=True, gc=False):
    """An attachment whose bytes the request builder already read from the
    thread's side file and checked (:mod:`kun.runtime.sidefiles`): the
    reader sends ``data`` and never asks the loader, so the model gets what
    was recorded, not what the ``path`` holds now. Never recorded."""

    data: bytes = b""

    def __repr__(self) -> str:
        return f"HeldAttachment(name={self.name!r}, ref={self.ref!r})"


def read_attachment(attachment: Attachment) -> bytes:
    """The standard loader: the file at the attachment's path."""
    if attachment.path is None:
        raise FileNotFoundError(f"attachment {attachment.name!r} has no path")
    return Path(attachment.path).read_bytes()


class AttachmentReader:
    """Turns attachments into images or text for one model (see the module
    docstring)."""

    def __init__(
        self,
        load: AttachmentLoader | None,
        *,
        takes_images: bool,
        limit: int = DEFAULT_FALLBACK_LIMIT,
    ) -> None:
        self._load = load
        self.takes_images = takes_images
        self.limit = limit

    def for_user(self, attachment: Attachment, *, strict: bool = True) -> Image | str:
        """The attachment of a user message; over the limit it raises, or
        with ``strict`` false is a note (see the module docstring)."""
        data = self._bytes(attachment)
        if isinstance(data, str):
            return data
        media_type = sniff_image_type(data)
        if media_type is not None and self.takes_images:
            return _image(attachment, data, media_type)
        try:
            return self._fallback(attachment, data, media_type)
        except AttachmentTooLarge:
            if strict:
                raise
            mime = media_type or attachment.mime_type
            return (
                f"{_describe(attachment, mime, f'{len(data)} bytes')}: not sent, over the "
                f"{self.limit}-byte limit for files sent as text"
            )

    def for_tool(self, attachment: Attachment) -> Image | str:
        data = self._bytes(attachment)
        media_type = None if isinstance(data, str) else sniff_image_type(data)
        if media_type is not None and self.takes_images and isinstance(data, bytes):
            return _image(attachment, data, media_type)
        if media_type is not None or attachment.mime_type.startswith("image/"):
            return IMAGE_OMITTED
        return f"(attachment {attachment.name!r} omitted)"

    def _bytes(self, attachment: Attachment) -> bytes | str:
        if isinstance(attachment, HeldAttachment):
            return attachment.data
        if self._load is None:
            return f"{_describe(attachment, attachment.mime_type)}: content not available"
        try:
            return self._load(attachment)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            return f"{_describe(attachment, attachment.mime_type)}: not readable ({reason})"

    def _fallback(self, attachment: Attachment, data: bytes, media_type: str | None) -> str:
        if len(data) > self.limit:
            raise AttachmentTooLarge(
                f"attachment {attachment.name!r} is {len(data)} bytes; a model that cannot "
                f"take it as an image gets it as base64 text, which is limited to "
                f"{self.limit} bytes. Use a model that takes images, or attach a smaller file"
            )
        dims = image_dimensions(data, media_type) if media_type else None
        size = f"{dims[0]}x{dims[1]} pixels, " if dims else ""
        header = _describe(
            attachment, media_type or attachment.mime_type, f"{size}{len(data)} bytes"
        )
        return f"{header}, base64:\n{base64.b64encode(data).decode('ascii')}"


def _image(attachment: Attachment, data: bytes, media_type: str) -> Image:
    return Image(
        media_type=media_type, data=base64.b64encode(data).decode("ascii"), name=attachment.name
    )


def _describe(attachment: Attachment, mime_type: str, extra: str = "") -> str:
    facts = [mime_type]
    if extra:
        facts.append(extra)
    if attachment.path:
        facts.append(f"path {attachment.path}")
    return f"Attachment {attachment.name!r} ({', '.join(facts)})"


def _be(data: bytes, at: int, size: int) -> int:
    if at + size > len(data):
        raise IndexError(at)
    return int.from_bytes(data[at : at + size], "big")


def _le(data: bytes, at: int, size: int) -> int:
    if at + size > len(data):
        raise IndexError(at)
    return int.from_bytes(data[at : at + size], "little")


def _webp_dimensions(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        return _le(data, 24, 3) + 1, _le(data, 27, 3) + 1
    if chunk == b"VP8L" and data[20:21] == b"\x2f":
        bits = _le(data, 21, 4)
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        return _le(data, 26, 2) & 0x3FFF, _le(data, 28, 2) & 0x3FFF
    return None


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:
            at += 1
            continue
        if marker in _JPEG_SOF:
            return _be(data, at + 7, 2), _be(data, at + 5, 2)
        if 0xD0 <= marker <= 0xD9 or marker == 0x01:
            at += 2
            continue
        at += 2 + _be(data, at + 2, 2)
    return None
