"""The neutral projection: message-level repair, cache order, attachments."""

from __future__ import annotations

import msgspec
import pytest

from kun.contracts.items import Attachment, Item
from kun.contracts.model import ModelRequest
from kun.model.errors import AttachmentTooLarge
from kun.model.request.images import AttachmentReader, Image
from kun.model.request.messages import (
    NO_OUTPUT,
    Assistant,
    Call,
    HistoryProjection,
    Message,
    Reasoning,
    System,
    Text,
    ToolOutput,
    User,
    assemble,
    heal_tool_pairs,
)

from .histories import DIAGRAM, MULTI_STEP, SCREENSHOT, call, load, result, say, user

TEXT = AttachmentReader(load, takes_images=False)
VISION = AttachmentReader(load, takes_images=True)
ARGS = msgspec.Raw(b"{}")


def calling(*ids: str, text: str = "") -> Assistant:
    parts: list[Reasoning | Text | Call] = [Text(text)] if text else []
    parts += [Call(call_id=i, name="t", arguments=ARGS) for i in ids]
    return Assistant(content=tuple(parts))


def out(call_id: str) -> ToolOutput:
    return ToolOutput(call_id=call_id, name="t", text="ok")


def ids(messages: list[Message]) -> list[str]:
    """A compact picture: u / a(ids) / t:id / s."""
    picture = []
    for m in messages:
        if isinstance(m, Assistant):
            picture.append(f"a({','.join(c.call_id for c in m.calls)})")
        elif isinstance(m, ToolOutput):
            picture.append(f"t:{m.call_id}")
        else:
            picture.append("u" if isinstance(m, User) else "s")
    return picture


U = User(content=(Text("hi"),))


def test_heal_keeps_complete_pairs_and_orders_outputs_by_call() -> None:
    healed = heal_tool_pairs([U, calling("a", "b"), out("b"), out("a"), U])
    assert ids(healed) == ["u", "a(a,b)", "t:a", "t:b", "u"]


def test_heal_drops_orphan_outputs() -> None:
    healed = heal_tool_pairs([U, out("x"), calling("a"), out("a"), out("x"), U, out("a")])
    assert ids(healed) == ["u", "a(a)", "t:a", "u"]


def test_heal_strips_unanswered_calls_and_keeps_the_text() -> None:
    healed = heal_tool_pairs([U, calling("a", "b", text="Reading."), out("a"), U])
    assert ids(healed) == ["u", "a()", "u"]
    assert isinstance(healed[1], Assistant)
    assert healed[1].text == "Reading."
    assert ids(heal_tool_pairs([U, calling("a"), U, out("a")])) == ["u", "u"]


def test_heal_drops_a_block_whose_results_come_late() -> None:
    assert ids(heal_tool_pairs([U, calling("a"), U, out("a")])) == ["u", "u"]


def test_heal_refuses_duplicate_call_ids() -> None:
    assert ids(heal_tool_pairs([U, calling("a", "a"), out("a")])) == ["u"]


def test_projection_extended_item_by_item_equals_one_projection() -> None:
    items: list[Item] = [*MULTI_STEP, user(2, "more"), call("c9"), result("c9", "x")]
    whole = HistoryProjection(TEXT).extend(items).messages()
    growing = HistoryProjection(TEXT)
    for n, item in enumerate(items, 1):
        growing.extend([item])
        assert growing.messages() == HistoryProjection(TEXT).extend(items[:n]).messages()
    assert growing.messages() == whole


def test_projection_reuses_the_messages_it_settled() -> None:
    projection = HistoryProjection(TEXT).extend(MULTI_STEP[:5])
    first = projection.messages()
    projection.extend([*MULTI_STEP[5:], user(2, "more")])
    second = projection.messages()
    assert ids(first) == ["u", "a(call_1)", "t:call_1"]
    assert all(a is b for a, b in zip(first[:3], second[:3], strict=True))


def test_assemble_puts_each_layer_in_cache_order() -> None:
    request = ModelRequest(
        system_prompt="S",
        persona="P",
        mode_instruction="M",
        prefix=(user(0, "earlier"),),
        history=(user(1, "now"),),
        context_instructions="C",
    )
    history = HistoryProjection(TEXT).extend((*request.prefix, *request.history)).messages()
    messages = assemble(request, history, TEXT)
    assert messages[:3] == [System("S"), System("P"), System("M")]
    assert [m.content for m in messages[3:5]] == [(Text("earlier"),), (Text("now"),)]  # type: ignore[union-attr]
    assert messages[-1] == System("C", late=True)


def test_blank_system_layers_are_left_out() -> None:
    request = ModelRequest(system_prompt=" ", context_instructions="\n", history=(user(1, "x"),))
    history = HistoryProjection(TEXT).extend(request.history).messages()
    assert ids(assemble(request, history, TEXT)) == ["u"]


def test_request_attachments_go_on_the_last_user_message() -> None:
    request = ModelRequest(
        history=(user(1, "a"), say(1, "b"), user(2, "look"), call("c1"), result("c1", "r")),
        attachments=(DIAGRAM,),
    )
    history = HistoryProjection(VISION).extend(request.history).messages()
    messages = assemble(request, history, VISION)
    last_user = messages[2]
    assert isinstance(last_user, User)
    assert last_user.content[0] == Text("look")
    image = last_user.content[1]
    assert isinstance(image, Image)
    assert image.media_type == "image/png"


def test_attachments_without_a_user_message_open_one_and_are_not_repeated() -> None:
    request = ModelRequest(attachments=(SCREENSHOT,))
    (only,) = assemble(request, [], VISION)
    assert isinstance(only, User)
    already = user(1, "see", attachments=(SCREENSHOT,))
    history = HistoryProjection(VISION).extend([already]).messages()
    request = ModelRequest(history=(already,), attachments=(SCREENSHOT,))
    (again,) = assemble(request, history, VISION)
    assert isinstance(again, User)
    assert len(again.content) == 2


def test_empty_tool_output_and_tool_images_for_a_text_only_model() -> None:
    items: list[Item] = [
        user(1, "shot"),
        call("c1", "shot"),
        result("c1", "", name="shot", attachments=(SCREENSHOT,)),
    ]
    tool = HistoryProjection(TEXT).extend(items).messages()[-1]
    assert isinstance(tool, ToolOutput)
    assert tool.text == f"{NO_OUTPUT}\n(image omitted)"
    assert tool.images == ()
    seen = HistoryProjection(VISION).extend(items).messages()[-1]
    assert isinstance(seen, ToolOutput)
    assert [image.media_type for image in seen.images] == ["image/png"]


def test_corrupt_arguments_become_a_raw_object() -> None:
    broken = msgspec.structs.replace(call("c1"), arguments=msgspec.Raw(b"[1, 2]"))
    messages = HistoryProjection(TEXT).extend([user(1, "x"), broken, result("c1", "r")])
    assistant = messages.messages()[1]
    assert isinstance(assistant, Assistant)
    assert msgspec.json.decode(bytes(assistant.calls[0].arguments)) == {"__raw": "[1, 2]"}


def test_an_oversized_fallback_is_a_clear_error_for_the_requests_own_attachment() -> None:
    big = Attachment(name="big.bin", mime_type="application/octet-stream", path="/big")
    reader = AttachmentReader(lambda _: b"x" * 101, takes_images=False, limit=100)
    request = ModelRequest(history=(user(1, "x"),), attachments=(big,))
    history = HistoryProjection(reader).extend(request.history).messages()
    with pytest.raises(AttachmentTooLarge, match=r"'big.bin' is 101 bytes.*limited to 100 bytes"):
        assemble(request, history, reader)


def test_an_oversized_attachment_in_the_history_is_a_note() -> None:
    """It was accepted when attached; refusing it now would refuse every
    later request of the thread (issue 8, item 18)."""
    big = Attachment(name="big.bin", mime_type="application/octet-stream", path="/big")
    reader = AttachmentReader(lambda _: b"x" * 101, takes_images=False, limit=100)
    (message,) = HistoryProjection(reader).extend([user(1, "x", attachments=(big,))]).messages()
    assert isinstance(message, User)
    assert message.content[1] == Text(
        "Attachment 'big.bin' (application/octet-stream, 101 bytes, path /big): "
        "not sent, over the 100-byte limit for files sent as text"
    )
