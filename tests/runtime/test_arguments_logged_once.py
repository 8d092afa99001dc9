"""A streamed tool call's arguments are logged once: its ``item_completed``
names them ``arguments_from_text`` when its raw arguments are the text its
deltas built, and keeps them when they differ."""

from __future__ import annotations

import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.items import ToolCall
from kun.domain.reduce import replay
from kun.runtime.recorder import EventRecorder
from kun.store.memory import MemoryEventStore
from tests.runtime.test_previews import TID, Clock, call, draft, start


async def _record(streamed: str, raw: bytes) -> tuple[ev.ItemCompleted, MemoryEventStore]:
    store = MemoryEventStore()
    async with store, EventRecorder(store, clock=Clock()) as recorder:
        await start(recorder)
        for i in range(0, len(streamed), 4):
            await recorder.record(TID, call("write_file" if i == 0 else "", streamed[i : i + 4]))
        item = ToolCall(
            id="item_c", call_id="c", name="write_file", arguments=msgspec.Raw(raw),
            arguments_text=streamed,
        )  # fmt: skip
        (done,) = await recorder.record(TID, draft(ev.ItemCompleted, item=item))
        assert replay(list(store.read(TID))) == recorder.state(TID)
    return done, store


@pytest.mark.anyio
async def test_arguments_that_are_the_streamed_text_are_not_repeated() -> None:
    content = 'line one\nline two with "quotes"\n' * 40
    args = msgspec.json.encode({"path": "notes.md", "content": content}).decode()
    done, store = await _record(args, args.encode())
    assert done.arguments_from_text and done.text_from_deltas is not None
    assert bytes(done.item.arguments) == b"{}"  # type: ignore[union-attr]
    (call_item,) = [i for i in replay(list(store.read(TID))).turns[0].items if i.id == "item_c"]
    assert bytes(call_item.arguments) == args.encode()  # type: ignore[union-attr]
    assert call_item.arguments_text == args  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_arguments_other_than_the_streamed_text_are_kept() -> None:
    args = '{"path": "a.py"}'
    done, store = await _record(args, b'{"path":"a.py"}')
    assert done.text_from_deltas is not None and not done.arguments_from_text
    assert bytes(done.item.arguments) == b'{"path":"a.py"}'  # type: ignore[union-attr]
    (call_item,) = [i for i in replay(list(store.read(TID))).turns[0].items if i.id == "item_c"]
    assert bytes(call_item.arguments) == b'{"path":"a.py"}'  # type: ignore[union-attr]
