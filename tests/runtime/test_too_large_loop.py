"""A body the provider refuses as too large (413) with a scripted model: sent
once more without its attachments and a warning, or failed as before."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from kun.contracts.items import Attachment, ToolResult, UserMessage, WarningItem
from kun.contracts.model import ErrorChunk, ModelRequest, ModelStreamChunk
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.media import ATTACHMENTS_DROPPED, without_attachments
from tests.model.request.histories import png
from tests.runtime.support import harness

pytestmark = pytest.mark.anyio


def _too_large() -> list[ModelStreamChunk]:
    return [ErrorChunk(code="request_too_large", message="request too large (HTTP 413)")]


def _photo(tmp_path: Path) -> Attachment:
    data = png(8, 8) + b"\0" * 5_000
    path = tmp_path / "photo.png"
    path.write_bytes(data)
    return Attachment(name="photo.png", mime_type="image/png", path=str(path), size_bytes=len(data))


def _attachments(request: ModelRequest) -> list[Attachment]:
    """The request's attachments as they were given (without the side file
    the turn stored each in, and the bytes the request holds from it)."""
    found = list(request.attachments)
    for item in (*request.prefix, *request.history):
        if isinstance(item, (UserMessage, ToolResult)):
            found.extend(item.attachments)
    return [_given(a) for a in found]


def _given(attachment: Attachment) -> Attachment:
    return Attachment(
        name=attachment.name,
        mime_type=attachment.mime_type,
        path=attachment.path,
        size_bytes=attachment.size_bytes,
    )


async def test_a_413_with_an_image_is_sent_again_without_it(tmp_path: Path) -> None:
    photo = _photo(tmp_path)
    async with harness(tmp_path, [_too_large(), text_reply("seen, without the picture")]) as h:
        turn = await h.run("look at this", attachments=(photo,))
        assert turn.status == "completed"
        refused, resent = h.model.requests
    assert _attachments(refused) == [photo]
    assert _attachments(resent) == []
    assert resent.history[-1] == msgspec.structs.replace(refused.history[-1], attachments=())
    (warning,) = [i for i in turn.items if isinstance(i, WarningItem)]
    assert warning.code == ATTACHMENTS_DROPPED
    assert "1 attachment:" in warning.message and str(tmp_path / "photo.png") in warning.message
    (message,) = [i for i in turn.items if isinstance(i, UserMessage)]
    assert tuple(map(_given, message.attachments)) == (photo,), "the log keeps the attachment"


async def test_once_dropped_the_attachments_stay_out_of_the_turns_later_steps(
    tmp_path: Path,
) -> None:
    photo = _photo(tmp_path)
    script = [
        _too_large(),
        tool_reply("read_file", {"path": "a.py"}),
        text_reply("done"),
        text_reply("next turn"),
    ]
    async with harness(tmp_path, script) as h:
        turn = await h.run("look at this", attachments=(photo,))
        assert turn.status == "completed"
        _, _, after_tool = h.model.requests
        assert isinstance(after_tool.history[-1], ToolResult)
        assert _attachments(after_tool) == []
        assert len([i for i in turn.items if isinstance(i, WarningItem)]) == 1
        assert (await h.run("and now?")).status == "completed"
        assert _attachments(h.model.requests[-1]) == [photo], "the next turn tries them again"


async def test_a_second_413_fails_the_turn_as_before(tmp_path: Path) -> None:
    photo = _photo(tmp_path)
    async with harness(tmp_path, [_too_large(), _too_large()]) as h:
        turn = await h.run("look at this", attachments=(photo,))
        assert len(h.model.requests) == 2
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "request_too_large"
    assert [i.code for i in turn.items if isinstance(i, WarningItem)] == [ATTACHMENTS_DROPPED]


async def test_a_413_without_attachments_fails_at_once(tmp_path: Path) -> None:
    async with harness(tmp_path, [_too_large(), text_reply("never sent")]) as h:
        turn = await h.run("hello")
        assert len(h.model.requests) == 1
    assert turn.status == "failed"
    assert turn.error is not None and turn.error.code == "request_too_large"
    assert not [i for i in turn.items if isinstance(i, WarningItem)]


def test_tool_result_and_request_attachments_are_dropped_too() -> None:
    shot = Attachment(name="shot.png", mime_type="image/png", size_bytes=10)
    extra = Attachment(name="extra.png", mime_type="image/png")
    result = ToolResult(id="res_1", call_id="c1", output="ok", attachments=(shot,))
    request = ModelRequest(history=(UserMessage(id="m", text="hi"), result), attachments=(extra,))
    bare, dropped = without_attachments(request)
    assert dropped == [shot, extra]
    assert _attachments(bare) == []
    assert bare.history[1] == msgspec.structs.replace(result, attachments=())
