"""write_file and edit_file save what a file held before they change it and
say so in their result's checkpoint; a content that cannot be saved leaves
the file unchanged."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec
import pytest

from kun.contracts.items import BlobRef
from kun.store.blobs import MemoryBlobStore
from kun.tools.base import ToolContext, ToolOutput
from kun.tools.host import default_host

pytestmark = pytest.mark.anyio


async def _call(
    ws: Path, name: str, args: dict[str, object], blobs: MemoryBlobStore | None
) -> ToolOutput:
    ctx = ToolContext(
        workspace=ws,
        thread_id="t",
        turn_id="u",
        call_id="c",
        save_side_file=None if blobs is None else blobs.put,
    )
    return await default_host().execute(name, msgspec.json.encode(args), ctx)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def test_write_and_edit_record_before_and_after(tmp_path: Path) -> None:
    blobs = MemoryBlobStore("t")
    made = await _call(tmp_path, "write_file", {"path": "d/n.txt", "content": "one\r\n"}, blobs)
    assert made.checkpoint is not None and made.checkpoint.path == "d/n.txt"
    assert made.checkpoint.before is None and made.checkpoint.after_sha256 == _sha(b"one\r\n")
    edited = await _call(
        tmp_path,
        "edit_file",
        {"path": "d/n.txt", "old_string": "one\n", "new_string": "two\n"},
        blobs,
    )
    point = edited.checkpoint
    assert point is not None and point.before is not None
    assert blobs.get(point.before) == b"one\r\n"
    assert point.after_sha256 == _sha((tmp_path / "d/n.txt").read_bytes())


async def test_an_overwritten_binary_file_is_saved_whole(tmp_path: Path) -> None:
    big = bytes(range(256)) * 5000
    (tmp_path / "b.bin").write_bytes(big)
    blobs = MemoryBlobStore("t")
    out = await _call(tmp_path, "write_file", {"path": "b.bin", "content": "x"}, blobs)
    assert out.checkpoint is not None and out.checkpoint.before is not None
    assert blobs.get(out.checkpoint.before) == big


async def test_no_store_no_checkpoint_and_failed_calls_have_none(tmp_path: Path) -> None:
    out = await _call(tmp_path, "write_file", {"path": "a", "content": "x"}, None)
    assert not out.is_error and out.checkpoint is None
    blobs = MemoryBlobStore("t")
    missing = await _call(
        tmp_path, "edit_file", {"path": "a", "old_string": "zz", "new_string": "y"}, blobs
    )
    assert missing.is_error and missing.checkpoint is None and blobs.blobs == {}


async def test_a_content_that_cannot_be_saved_leaves_the_file_unchanged(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("precious\n")

    def full(data: bytes) -> BlobRef:
        raise OSError(28, "No space left on device")

    ctx = ToolContext(
        workspace=tmp_path, thread_id="t", turn_id="u", call_id="c", save_side_file=full
    )
    for name, args in [
        ("write_file", {"path": "keep.txt", "content": "gone"}),
        ("edit_file", {"path": "keep.txt", "old_string": "precious", "new_string": "gone"}),
    ]:
        out = await default_host().execute(name, msgspec.json.encode(args), ctx)
        assert out.is_error and out.code == "checkpoint_failed", out.output
        assert "No space left" in out.output
    assert (tmp_path / "keep.txt").read_text() == "precious\n"
