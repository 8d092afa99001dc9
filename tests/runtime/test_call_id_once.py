"""A tool call's id is written on its first delta only: later deltas of the
call (and their live previews) leave it out, and the fold, the live rule and
the log still agree on the call (issue 10: a call streaming a file's content
wrote its ids on every line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from kun.contracts import events as ev
from kun.contracts.items import ToolCall, UserMessage
from kun.domain.reduce import replay
from kun.runtime.bus import LiveText
from kun.runtime.coalesce import Coalescer
from kun.runtime.recorder import EventRecorder
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import log_path

TID = "thr_callid"
TURN = "turn_1"


def draft(cls: type[Any], turn_id: str | None = TURN, **fields: Any) -> Any:
    return cls(seq=0, at=0, thread_id="", turn_id=turn_id, **fields)


def call(call_id: str, arguments: str, name: str = "") -> ev.ToolCallDelta:
    return draft(  # type: ignore[no-any-return]
        ev.ToolCallDelta, item_id=f"item_{call_id}", call_id=call_id, name=name, arguments=arguments
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def test_only_the_first_buffer_of_a_call_names_it() -> None:
    coalescer = Coalescer(window_ms=100, max_bytes=1 << 12)
    assert coalescer.offer(call("c", "ab", "write_file"), 0) == []
    (first,) = coalescer.offer(call("c", "cd"), 150)
    (second,) = coalescer.offer(call("d", "ef", "read_file"), 300)
    assert coalescer.offer(call("d", "gh"), 320) == [], "a bare buffer still takes its call"
    third = coalescer.take()
    assert third is not None
    assert first.merged().call_id == "c"
    assert second.merged().call_id == "", "a later buffer of call c"
    assert second.merged().arguments == "cd"
    assert third.merged().call_id == "d", "another call is named again"
    assert third.merged().arguments == "efgh"


async def _stream(home: Path, content: str) -> tuple[list[ev.Event], list[ev.Event]]:
    """Two calls streamed 20 ms a fragment through the recorder; what a live
    follower saw and what the log holds."""
    clock = Clock()
    live: list[ev.Event] = []
    async with JsonlEventStore(home) as store, EventRecorder(store, clock=clock) as recorder:
        await recorder.record(
            TID,
            draft(ev.ThreadCreated, None),
            draft(ev.TurnStarted),
            draft(ev.ItemCompleted, item=UserMessage(id="msg_1", text="hi")),
        )
        follower = recorder.subscribe(TID, after=3, live=True)

        async def collect() -> None:
            async for event in follower:
                live.append(event)
                if isinstance(event, ev.TurnCompleted):
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(collect)
            await anyio.sleep(0.01)
            for call_id in ("c", "d"):
                for i in range(0, len(content), 4):
                    name = "write_file" if i == 0 else ""
                    await recorder.record(TID, call(call_id, content[i : i + 4], name))
                    clock.now += 20
                item = ToolCall(
                    id=f"item_{call_id}", call_id=call_id, name="write_file",
                    arguments=msgspec.Raw(content.encode()), arguments_text=content,
                )  # fmt: skip
                await recorder.record(TID, draft(ev.ItemCompleted, item=item))
            await recorder.record(TID, draft(ev.TurnCompleted))
        logged = list(store.read(TID, after=3))
    return live, logged


@pytest.mark.anyio
async def test_later_deltas_of_a_call_leave_its_id_out_and_everyone_agrees(
    tmp_path: Path,
) -> None:
    content = '{"path": "notes.md", "content": "' + "line of a file\\n" * 40 + '"}'
    live, logged = await _stream(tmp_path, content)
    deltas = [e for e in logged if isinstance(e, ev.ToolCallDelta)]
    for call_id in ("c", "d"):
        mine = [e for e in deltas if e.item_id == f"item_{call_id}"]
        assert len(mine) >= 3, "a stream of several seconds is written in several lines"
        assert [e.call_id for e in mine] == [call_id] + [""] * (len(mine) - 1)
        assert "".join(e.arguments for e in mine) == content
    lines = log_path(tmp_path, TID).read_bytes().splitlines()
    assert sum(b'"call_id"' in line for line in lines if b"tool_call_delta" in line) == 2

    assert [e for e in live if e.seq] == logged
    rule = LiveText()
    seen: dict[str, str] = {}
    for event in live:
        fresh = rule.fresh(event)
        if isinstance(fresh, ev.ToolCallDelta):
            seen[fresh.item_id] = seen.get(fresh.item_id, "") + fresh.arguments
    assert seen == {"item_c": content, "item_d": content}, "each character shown once"

    events = list(JsonlEventStore(tmp_path).read(TID))
    streaming = [e for e in events if not isinstance(e, ev.ItemCompleted | ev.TurnCompleted)]
    in_progress = replay(streaming).turns[0].items
    assert [(i.call_id, i.arguments_text) for i in in_progress if isinstance(i, ToolCall)] == [
        ("c", content),
        ("d", content),
    ], "the fold takes each call's id from its first delta"
    done = replay(events).turns[0].items
    assert [i.call_id for i in done if isinstance(i, ToolCall)] == ["c", "d"]
