"""Attachments are side files of their thread (``Attachment.ref``): the bytes
a request sends are the ones recorded, wherever the thread moved and
whatever happened to the file since.

The model is a real HTTP client (a codec for a model that takes images,
loading from the path as the composition root does) talking to the loopback
provider, so "the same request" is checked on the bytes it received.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import msgspec
import pytest

from kun.app.cleanup import collect
from kun.contracts import events as ev
from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import Attachment, ToolResult, UserMessage
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.contracts.threads import ThreadSettings
from kun.domain.state import TurnState
from kun.model.client import HttpModelClient
from kun.model.request.images import read_attachment
from kun.model.request_codec import codec_for
from kun.portable.bundle import export_thread
from kun.portable.unbundle import import_bundle
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store import log_path, read_log
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse
from kun.testing.logbuilder import LogBuilder
from kun.tools.host import default_host
from tests.model.request.histories import png
from tests.runtime.support import calls

pytestmark = pytest.mark.anyio

PHOTO = png(16, 16)
OTHER = png(9, 7)
IMAGES = ModelCapabilities(known=True, input_modalities=("text", "image"))


def _answer(text: str) -> FakeResponse:
    return FakeResponse(chunks=(TextDeltaChunk(text=text), CompletedChunk(stop_reason="stop")))


def _b64(data: bytes) -> bytes:
    return base64.b64encode(data)


@asynccontextmanager
async def served(
    home: Path, provider: FakeProvider, workspace: Path, thread_id: str | None = None
) -> AsyncIterator[tuple[TurnService, str]]:
    """A service on ``home`` whose model is the fake provider, and a thread
    (a new one unless ``thread_id``)."""
    codec = codec_for("chat_completions", capabilities=IMAGES, load_attachment=read_attachment)
    client = HttpModelClient("fake", "m", provider.base_url, "chat_completions", codec=codec)
    store = JsonlEventStore(home)
    async with client, store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg, model=client, tools=default_host())
        if thread_id is None:
            settings = ThreadSettings(workspace=str(workspace), approval_policy="full-auto")
            thread_id = await service.create_thread(settings)
        try:
            yield service, thread_id
        finally:
            tg.cancel_scope.cancel()


async def _run(
    service: TurnService, thread_id: str, text: str, attachments: Sequence[Attachment] = ()
) -> TurnState:
    turn_id = await service.start_turn(thread_id, text, attachments=attachments)
    with anyio.fail_after(20):
        return await service.wait_turn(thread_id, turn_id)


def _photo(tmp_path: Path, data: bytes = PHOTO) -> Attachment:
    path = tmp_path / "photo.png"
    path.write_bytes(data)
    return Attachment(name="photo.png", mime_type="image/png", path=str(path), size_bytes=len(data))


def _messages(home: Path, thread_id: str) -> list[UserMessage]:
    return [
        e.item
        for e in read_log(log_path(home, thread_id))
        if isinstance(e, ev.ItemCompleted) and isinstance(e.item, UserMessage)
    ]


def _blob(home: Path, thread_id: str, sha256: str) -> Path:
    return home / "threads" / thread_id / "blobs" / sha256


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


async def test_an_image_survives_export_and_import_with_its_file_deleted(
    tmp_path: Path, workspace: Path
) -> None:
    photo = _photo(tmp_path)
    script = [_answer("a grey square"), _answer("still grey"), _answer("still grey")]
    async with FakeProvider(script, format="chat_completions") as provider:
        async with served(tmp_path / "a", provider, workspace) as (service, thread_id):
            assert (await _run(service, thread_id, "look", [photo])).status == "completed"
        (message,) = _messages(tmp_path / "a", thread_id)
        (kept,) = message.attachments
        assert kept.ref is not None and kept.ref.size == len(PHOTO) and kept.path == photo.path
        assert _blob(tmp_path / "a", thread_id, kept.ref.sha256).read_bytes() == PHOTO
        bundle = tmp_path / "moved.kun.tar"
        export_thread(tmp_path / "a", thread_id, bundle)
        import_bundle(tmp_path / "b", bundle)
        (tmp_path / "photo.png").unlink()
        for home in ("a", "b"):
            async with served(tmp_path / home, provider, workspace, thread_id) as (service, _):
                assert (await _run(service, thread_id, "and now?")).status == "completed"
        first, at_a, at_b = provider.requests
    assert _b64(PHOTO) in first.body
    assert at_b.body == at_a.body
    assert _b64(PHOTO) in at_b.body and b"not readable" not in at_b.body


@pytest.mark.parametrize("damage", ["missing", "altered"])
async def test_a_damaged_attachment_side_file_fails_the_turn_naming_it(
    tmp_path: Path, workspace: Path, damage: str
) -> None:
    photo = _photo(tmp_path)
    script = [_answer("seen"), _answer("never")]
    async with FakeProvider(script, format="chat_completions") as provider:
        async with served(tmp_path / "home", provider, workspace) as (service, thread_id):
            assert (await _run(service, thread_id, "look", [photo])).status == "completed"
            (message,) = _messages(tmp_path / "home", thread_id)
            ref = message.attachments[0].ref
            assert ref is not None
            blob = _blob(tmp_path / "home", thread_id, ref.sha256)
            if damage == "missing":
                blob.unlink()
            else:
                blob.write_bytes(OTHER[: ref.size].ljust(ref.size, b"\0"))
            turn = await _run(service, thread_id, "and again")
        assert len(provider.requests) == 1, "nothing else is sent"
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "side_file_unreadable"
    assert str(blob) in turn.error.message and damage in turn.error.message


async def test_an_attachment_recorded_before_refs_is_still_read_from_its_path(
    tmp_path: Path, workspace: Path
) -> None:
    photo = _photo(tmp_path)
    old = Attachment(name=photo.name, mime_type=photo.mime_type, path=photo.path)
    home = tmp_path / "home"
    b = LogBuilder("thr_old")
    b.create(workspace=str(workspace), title="old", provider="fake", model="m")
    b.start_turn()
    b.item(UserMessage(id=b.next_id("msg"), text="look", attachments=(old,)))
    b.assistant_text(["seen"])
    b.complete()
    async with JsonlEventStore(home) as store:
        await store.append("thr_old", b.events, expected_seq=0)
    line = log_path(home, "thr_old").read_bytes().split(b"\n")[2]
    assert b'"ref"' not in line
    async with FakeProvider([_answer("still")], format="chat_completions") as provider:
        async with served(home, provider, workspace, "thr_old") as (service, _):
            assert (await _run(service, "thr_old", "and now?")).status == "completed"
        (request,) = provider.requests
    assert _b64(PHOTO) in request.body
    assert log_path(home, "thr_old").read_bytes().split(b"\n")[2] == line
    assert not (home / "threads" / "thr_old" / "blobs").exists()
    assert _messages(home, "thr_old")[0].attachments == (old,)


async def test_an_unreadable_file_is_recorded_without_ref_and_noted_as_before(
    tmp_path: Path, workspace: Path
) -> None:
    gone = Attachment(name="gone.png", mime_type="image/png", path=str(tmp_path / "gone.png"))
    async with FakeProvider([_answer("nothing")], format="chat_completions") as provider:
        async with served(tmp_path / "home", provider, workspace) as (service, thread_id):
            assert (await _run(service, thread_id, "look", [gone])).status == "completed"
        (request,) = provider.requests
    assert _messages(tmp_path / "home", thread_id)[0].attachments == (gone,)
    assert b"not readable" in request.body


async def test_a_tool_image_is_sent_as_it_was_read_even_after_the_file_changed(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "pic.png").write_bytes(PHOTO)
    script = [
        FakeResponse(chunks=tuple(calls(("read_file", {"path": "pic.png"})))),
        _answer("a grey square"),
        _answer("the same square"),
    ]
    async with FakeProvider(script, format="chat_completions") as provider:
        async with served(tmp_path / "home", provider, workspace) as (service, thread_id):
            assert (await _run(service, thread_id, "read the picture")).status == "completed"
            (workspace / "pic.png").write_bytes(OTHER)
            assert (await _run(service, thread_id, "what was it?")).status == "completed"
        later = provider.requests[-1]
    results = [
        e.item
        for e in read_log(log_path(tmp_path / "home", thread_id))
        if isinstance(e, ev.ItemCompleted) and isinstance(e.item, ToolResult)
    ]
    (image,) = results[0].attachments
    assert image.ref is not None and image.ref.size == len(PHOTO)
    assert _b64(PHOTO) in later.body and _b64(OTHER) not in later.body


async def test_a_fork_copies_and_gc_keeps_attachment_side_files(
    tmp_path: Path, workspace: Path
) -> None:
    photo = _photo(tmp_path)
    home = tmp_path / "home"
    async with FakeProvider([_answer("seen"), _answer("forked")], format="chat_completions") as p:
        async with served(home, p, workspace) as (service, thread_id):
            assert (await _run(service, thread_id, "look", [photo])).status == "completed"
            ref = _messages(home, thread_id)[0].attachments[0].ref
            assert ref is not None
            fork = await service.fork_thread(thread_id)
            assert _blob(home, fork, ref.sha256).read_bytes() == PHOTO
            (tmp_path / "photo.png").unlink()
            _blob(home, thread_id, ref.sha256).unlink()
            assert (await _run(service, fork, "go on")).status == "completed"
        assert _b64(PHOTO) in p.requests[-1].body
    collect(home, fork)
    assert _blob(home, fork, ref.sha256).read_bytes() == PHOTO


def test_an_attachment_line_written_before_refs_decodes_unchanged() -> None:
    line = b'{"name":"a.png","mime_type":"image/png","path":"/x/a.png","size_bytes":null}'
    old = msgspec.json.decode(line, type=Attachment)
    assert old == Attachment(name="a.png", mime_type="image/png", path="/x/a.png")
    assert old.ref is None and msgspec.json.encode(old) == line.replace(b',"size_bytes":null', b"")
