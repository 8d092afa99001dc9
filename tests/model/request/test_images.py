"""Image sniffing, dimensions and the attachment reader."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import pytest

from kun.contracts.items import Attachment
from kun.model.errors import AttachmentTooLarge
from kun.model.request.images import (
    IMAGE_OMITTED,
    AttachmentReader,
    Image,
    image_dimensions,
    read_attachment,
    sniff_image_type,
)

from .histories import png

JPEG = (
    b"\xff\xd8\xff\xe0"
    + struct.pack(">H", 16)
    + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    + b"\xff\xc0"
    + struct.pack(">HBHH", 17, 8, 48, 64)
    + b"\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"
)
GIF = b"GIF89a" + struct.pack("<HH", 5, 7) + b"\x00\x00\x00"
WEBP_VP8X = b"RIFF\x00\x00\x00\x00WEBPVP8X" + b"\x0a\x00\x00\x00" + b"\x00" * 4
WEBP_VP8X += (99).to_bytes(3, "little") + (49).to_bytes(3, "little")
WEBP_VP8L = b"RIFF\x00\x00\x00\x00WEBPVP8L" + b"\x05\x00\x00\x00" + b"\x2f"
WEBP_VP8L += ((20 - 1) | ((10 - 1) << 14)).to_bytes(4, "little")
WEBP_VP8 = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 4 + b"\x00\x00\x00\x9d\x01\x2a"
WEBP_VP8 += struct.pack("<HH", 30, 15)


@pytest.mark.parametrize(
    ("data", "media_type", "size"),
    [
        (png(3, 2), "image/png", (3, 2)),
        (JPEG, "image/jpeg", (64, 48)),
        (GIF, "image/gif", (5, 7)),
        (WEBP_VP8X, "image/webp", (100, 50)),
        (WEBP_VP8L, "image/webp", (20, 10)),
        (WEBP_VP8, "image/webp", (30, 15)),
    ],
)
def test_type_and_size_come_from_the_bytes(
    data: bytes, media_type: str, size: tuple[int, int]
) -> None:
    assert sniff_image_type(data) == media_type
    assert image_dimensions(data, media_type) == size


@pytest.mark.parametrize("data", [b"", b"%PDF-1.7", b"RIFF\x00\x00\x00\x00WAVE", b"\x89PNG"])
def test_non_images_are_not_sniffed(data: bytes) -> None:
    assert sniff_image_type(data) is None


def test_truncated_headers_have_no_dimensions() -> None:
    assert image_dimensions(png(3, 2)[:20], "image/png") is None
    assert image_dimensions(JPEG[:12], "image/jpeg") is None
    assert image_dimensions(b"GIF89a", "image/gif") is None


PHOTO = Attachment(name="photo.webp", mime_type="image/webp", path="/p/photo.webp")


def reader(data: bytes, *, images: bool, limit: int = 1000) -> AttachmentReader:
    return AttachmentReader(lambda _: data, takes_images=images, limit=limit)


def test_a_vision_model_gets_the_sniffed_type_not_the_declared_one() -> None:
    seen = reader(png(1, 1), images=True).for_user(PHOTO)
    assert isinstance(seen, Image)
    assert seen.media_type == "image/png"
    assert seen.data_url.startswith("data:image/png;base64,iVBOR")


def test_a_text_only_model_gets_a_described_base64_fallback() -> None:
    data = png(3, 2)
    text = reader(data, images=False).for_user(PHOTO)
    assert text == (
        f"Attachment 'photo.webp' (image/png, 3x2 pixels, {len(data)} bytes, "
        f"path /p/photo.webp), base64:\n{base64.b64encode(data).decode()}"
    )


def test_a_non_image_goes_as_text_even_to_a_vision_model() -> None:
    notes = Attachment(name="notes.txt", mime_type="text/plain")
    text = reader(b"hello", images=True).for_user(notes)
    assert text == "Attachment 'notes.txt' (text/plain, 5 bytes), base64:\naGVsbG8="


def test_the_fallback_limit_is_a_clear_error() -> None:
    with pytest.raises(AttachmentTooLarge, match=r"photo\.webp"):
        reader(png(40, 40), images=False, limit=10).for_user(PHOTO)
    assert isinstance(reader(png(40, 40), images=True, limit=10).for_user(PHOTO), Image)


def test_unreadable_or_unloaded_attachments_become_a_note() -> None:
    def missing(_: Attachment) -> bytes:
        raise FileNotFoundError(2, "No such file or directory")

    failing = AttachmentReader(missing, takes_images=True)
    assert failing.for_user(PHOTO) == (
        "Attachment 'photo.webp' (image/webp, path /p/photo.webp): "
        "not readable (No such file or directory)"
    )
    unloaded = AttachmentReader(None, takes_images=True)
    assert unloaded.for_user(PHOTO).endswith(": content not available")  # type: ignore[union-attr]
    assert unloaded.for_tool(PHOTO) == IMAGE_OMITTED


def test_tool_attachments() -> None:
    assert isinstance(reader(png(1, 1), images=True).for_tool(PHOTO), Image)
    assert reader(png(1, 1), images=False).for_tool(PHOTO) == IMAGE_OMITTED
    log = Attachment(name="run.log", mime_type="text/plain")
    assert reader(b"x", images=True).for_tool(log) == "(attachment 'run.log' omitted)"


def test_read_attachment_reads_the_path(tmp_path: Path) -> None:
    path = tmp_path / "a.png"
    path.write_bytes(png(1, 1))
    assert read_attachment(Attachment(name="a", mime_type="x", path=str(path))) == png(1, 1)
    with pytest.raises(FileNotFoundError):
        read_attachment(Attachment(name="a", mime_type="x"))
