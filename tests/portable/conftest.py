"""Threads to move around: one written by today's store (lines without a
thread id) with a side file, and a golden log whose lines all name theirs."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import msgspec

from kun.contracts import events as ev
from kun.contracts.events import Event
from kun.contracts.items import ToolResult
from kun.store.blobs import FileBlobStore
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import blobs_dir, log_path
from kun.testing.logbuilder import LogBuilder

GOLDEN = Path(__file__).resolve().parents[2] / "events" / "golden"
GOLDEN_ID = "thr_01JE1F6G7H8J9K"
BIG = b"line of tool output\n" * 5000


def stored_thread(home: Path, thread_id: str = "thr_source") -> bytes:
    """Write a two-turn thread through the store, its second tool result
    in a side file; return the side file's bytes."""
    ref = FileBlobStore(blobs_dir(home, thread_id), thread_id).put(BIG)
    b = LogBuilder(thread_id)
    b.create(workspace="/w", title="moving", provider="p", model="m")
    b.start_turn("first")
    b.assistant_text(["hello ", "there"])
    b.run_tool("shell", {"cmd": "ls"}, "a\nb\n")
    b.usage(prompt_tokens=10, completion_tokens=3)
    b.complete()
    b.start_turn("second")
    call = b.tool_call("shell", {"cmd": "cat big"})
    b.start_tool(call)
    b.emit(ev.ToolCallFinished, turn_id=b.turn_id, item_id=call.id, call_id=call.call_id)
    b.item(ToolResult(id=b.next_id("res"), call_id=call.call_id, output="line", output_ref=ref))
    b.complete()
    events: list[Event] = b.events

    async def write() -> None:
        async with JsonlEventStore(home) as store:
            await store.append(thread_id, events, expected_seq=0)

    anyio.run(write)
    return BIG


def golden_thread(home: Path) -> Path:
    """The golden log whose every line names ``thr_01JE1F6G7H8J9K``."""
    path = log_path(home, GOLDEN_ID)
    path.parent.mkdir(parents=True)
    shutil.copyfile(GOLDEN / "everything.v1.events.jsonl", path)
    return path


def encode(events: list[Event]) -> bytes:
    return b"".join(msgspec.json.encode(e) + b"\n" for e in events)
