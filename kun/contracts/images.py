"""Which image an attachment's bytes are, read from their signature.

The bytes decide, never a file name or a declared type: the model layer
sends only what providers take, the file tools attach only real images, and
MCP results are checked the same way. One table, so the three agree; it
lives with the contracts because it is part of what an image attachment
is, and the tools may import nothing else.
"""

from __future__ import annotations

__all__ = ["sniff_image_type"]

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image_type(data: bytes) -> str | None:
    """The MIME type of an image read from its signature, or ``None``."""
    for signature, mime in _SIGNATURES:
        if data.startswith(signature):
            return mime
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp"
    return None
