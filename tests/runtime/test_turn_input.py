"""What a turn starts from and what one step records, so that every later
request of the thread is one a provider accepts (issue 8, items 13, 16, 17,
18, runtime side).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from click.testing import CliRunner

from kun.contracts.items import (
    AssistantReasoning,
    Attachment,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.contracts.model import ModelRequest, ModelStreamChunk, ReasoningDeltaChunk
from kun.entry import cli
from kun.errors import UserMistake
from kun.model.errors import AttachmentTooLarge
from kun.model.request_codec import codec_for
from kun.model.scripted import text_reply, tool_reply
from kun.model.toolcalls import SYNTHETIC_ID_PREFIX
from kun.store.jsonl import JsonlEventStore
from tests.model.request.histories import CLAUDE_THINKING, png
from tests.model.request.rules import violations
from tests.runtime.support import SlowTool, harness, host_with

pytestmark = pytest.mark.anyio


def claude_body(request: ModelRequest) -> dict[str, Any]:
    codec = codec_for("messages", capabilities=CLAUDE_THINKING)
    body = codec.encode(
        request, model="claude", stream=True, max_tokens=None, reasoning_effort="high"
    )
    decoded: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(body))
    return decoded


# -- item 13: a relay that sends no call ids --------------------------------------


async def test_synthesized_call_ids_are_unique_in_the_thread(tmp_path: Path) -> None:
    """The stream decoder names an id-less call ``…_index_0`` on every
    response; the log must not hold the same id once per step."""
    synthetic = f"{SYNTHETIC_ID_PREFIX}0"
    script = [
        tool_reply("read_file", {"path": "a.py"}, call_id=synthetic),
        tool_reply("read_file", {"path": "b.py"}, call_id=synthetic),
        text_reply("Both read."),
        tool_reply("read_file", {"path": "a.py"}, call_id=synthetic),
        text_reply("Again."),
    ]
    async with harness(tmp_path, script) as h:
        first = await h.run("read a.py and b.py")
        second = await h.run("read a.py again")
        items = [*first.items, *second.items]
        ids = [i.call_id for i in items if isinstance(i, ToolCall)]
        assert len(ids) == 3 and len(set(ids)) == 3
        assert [r.call_id for r in items if isinstance(r, ToolResult)] == ids
        assert all(not r.is_error for r in items if isinstance(r, ToolResult))
        assert violations("messages", claude_body(h.model.requests[-1])) == []


# -- item 16: a thinking block whose text was omitted ------------------------------


def signature_first() -> list[ModelStreamChunk]:
    """Claude with thinking display omitted: the thinking block carries a
    signature and no text, then the tool call."""
    return [
        ReasoningDeltaChunk(text="", signature="sig-omitted"),
        *tool_reply("read_file", {"path": "a.py"}, call_id="toolu_1"),
    ]


async def test_a_signature_only_thinking_block_is_recorded_before_its_calls(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, [signature_first(), text_reply("It prints a.")]) as h:
        turn = await h.run("what does a.py print?")
        kinds = [type(i).__name__ for i in turn.items]
        assert kinds.index("AssistantReasoning") < kinds.index("ToolCall"), kinds
        (reasoning,) = [i for i in turn.items if isinstance(i, AssistantReasoning)]
        assert (reasoning.status, reasoning.signature) == ("completed", "sig-omitted")
        body = claude_body(h.model.requests[1])
        assert body["thinking"]["type"] == "enabled", "thinking stays on for the next step"
        assert body["messages"][1]["content"][0] == {
            "type": "thinking",
            "thinking": "",
            "signature": "sig-omitted",
        }
        assert violations("messages", body) == []


# -- item 17: blank prompts ---------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n"])
async def test_a_blank_prompt_is_refused_and_records_nothing(tmp_path: Path, text: str) -> None:
    async with harness(tmp_path, [text_reply("hello")]) as h:
        before = h.state().last_seq
        with pytest.raises(UserMistake, match="blank") as raised:
            await h.service.start_turn(h.thread_id, text)
        assert type(raised.value).__name__ == "BlankPrompt"
        assert h.state().last_seq == before and h.state().turns == ()
        assert (await h.run("hi")).status == "completed", "the thread is still usable"


async def test_blank_steering_is_refused(tmp_path: Path) -> None:
    release, started = anyio.Event(), anyio.Event()
    tools = host_with(SlowTool(release=release, started=started))
    async with harness(tmp_path, [tool_reply("slow"), text_reply("done")], tools=tools) as h:
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await started.wait()
        with pytest.raises(UserMistake, match="blank"):
            await h.service.steer_turn(h.thread_id, turn_id, " \n")
        release.set()
        turn = await h.service.wait_turn(h.thread_id, turn_id)
        assert not any(isinstance(i, UserMessage) and i.steered for i in turn.items)
        assert turn.steered == 0


async def test_a_blank_prompt_with_an_attachment_is_not_blank(tmp_path: Path) -> None:
    image = tmp_path / "shot.png"
    image.write_bytes(png(2, 2))
    attachment = Attachment(name="shot.png", mime_type="image/png", path=str(image))
    async with harness(tmp_path, [text_reply("A picture.")]) as h:
        turn = await h.run("", attachments=(attachment,))
        assert turn.status == "completed"


def test_kun_run_refuses_a_blank_prompt_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "  ", "--home", str(tmp_path / "home")])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("kun: error: ") and "blank" in result.stderr
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.jsonl"))


# -- item 18: an attachment too large to send ---------------------------------------


def attach(tmp_path: Path, name: str, data: bytes, mime: str) -> Attachment:
    path = tmp_path / name
    path.write_bytes(data)
    return Attachment(name=name, mime_type=mime, path=str(path), size_bytes=len(data))


async def test_an_oversized_text_attachment_is_refused_once_when_attached(
    tmp_path: Path,
) -> None:
    big = attach(tmp_path, "big.log", b"x" * (32 * 1024 + 1), "text/plain")
    async with harness(tmp_path, [text_reply("hello"), text_reply("again")]) as h:
        before = h.state().last_seq
        with pytest.raises(AttachmentTooLarge, match=r"big\.log.*32769 bytes"):
            await h.service.start_turn(h.thread_id, "look at this", attachments=(big,))
        assert h.state().last_seq == before, "nothing recorded"
        assert (await h.run("never mind")).status == "completed"
        assert (await h.run("and now?")).status == "completed", "the thread stays usable"


async def test_attachments_that_can_be_sent_are_accepted(tmp_path: Path) -> None:
    small = attach(tmp_path, "notes.txt", b"x" * (32 * 1024), "text/plain")
    photo = attach(tmp_path, "photo.png", png(8, 8) + b"\0" * 50_000, "image/png")
    async with harness(tmp_path, [text_reply("seen")]) as h:
        turn = await h.run("look", attachments=(small, photo))
        assert turn.status == "completed"
        sent = h.model.requests[0].history
        assert any(isinstance(i, UserMessage) and len(i.attachments) == 2 for i in sent)


async def test_start_turn_checks_before_it_touches_the_log(tmp_path: Path) -> None:
    """The refusal comes before the orphan settlement and the turn."""
    async with harness(tmp_path, []) as h:
        with pytest.raises(UserMistake, match="blank"):
            await h.service.start_turn(h.thread_id, "")
        events = list(JsonlEventStore(h.home).read(h.thread_id))
        assert [type(e).__name__ for e in events] == ["ThreadCreated"]
