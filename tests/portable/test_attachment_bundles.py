"""A thread's attachments travel in its bundle as side files, checked like
any other: a bundle whose attachment was altered is refused naming it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import anyio
import pytest

from kun.contracts.items import Attachment, UserMessage
from kun.portable.bundle import export_thread
from kun.portable.errors import BundleRefused
from kun.portable.unbundle import import_bundle
from kun.store.blobs import FileBlobStore
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import blobs_dir, log_path
from kun.store.replay import replay_log
from kun.testing.logbuilder import LogBuilder
from tests.portable.marks import unmarked_state

PICTURE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def _thread_with_a_picture(home: Path) -> str:
    ref = FileBlobStore(blobs_dir(home, "thr_pic"), "thr_pic").put(PICTURE)
    picture = Attachment(name="p.png", mime_type="image/png", path="/gone/p.png", ref=ref)
    b = LogBuilder("thr_pic")
    b.create(workspace="/w", title="picture", provider="p", model="m")
    b.start_turn()
    b.item(UserMessage(id=b.next_id("msg"), text="look", attachments=(picture,)))
    b.assistant_text(["grey"])
    b.complete()

    async def write() -> None:
        async with JsonlEventStore(home) as store:
            await store.append("thr_pic", b.events, expected_seq=0)

    anyio.run(write)
    return ref.sha256


def test_an_attachment_travels_in_the_bundle(tmp_path: Path) -> None:
    sha256 = _thread_with_a_picture(tmp_path / "a")
    bundle = tmp_path / "t.kun.tar"
    manifest = export_thread(tmp_path / "a", "thr_pic", bundle)
    assert f"blobs/{sha256}" in {entry.path for entry in manifest.files}
    import_bundle(tmp_path / "b", bundle)
    assert (blobs_dir(tmp_path / "b", "thr_pic") / sha256).read_bytes() == PICTURE
    assert unmarked_state(log_path(tmp_path / "b", "thr_pic")) == replay_log(
        log_path(tmp_path / "a", "thr_pic")
    )


def test_an_altered_attachment_is_refused_on_export_and_on_import(tmp_path: Path) -> None:
    sha256 = _thread_with_a_picture(tmp_path / "a")
    bundle = tmp_path / "t.kun.tar"
    export_thread(tmp_path / "a", "thr_pic", bundle)
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    altered = PICTURE.replace(b"\x10", b"\x11", 1)
    members[f"blobs/{sha256}"] = altered
    tampered = tmp_path / "tampered.kun.tar"
    with tarfile.open(tampered, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(BundleRefused, match=f"blobs/{sha256}: SHA-256 differs"):
        import_bundle(tmp_path / "b", tampered)
    assert not (tmp_path / "b" / "threads" / "thr_pic").exists()
    (blobs_dir(tmp_path / "a", "thr_pic") / sha256).write_bytes(altered)
    with pytest.raises(BundleRefused, match=f"{sha256}: side file does not match its name"):
        export_thread(tmp_path / "a", "thr_pic", tmp_path / "again.kun.tar")
