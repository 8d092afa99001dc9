"""The tool ledger at one fsync per tool step (issue 10, item 7).

A machine crash keeps only what the log had fsynced: a prefix of the file.
The fsync of the real store is wrapped to remember that prefix's length, and
each tool, when it runs, reads the prefix: its ``tool_call_started`` (and the
``item_created`` of its call) must be in it, so reconciliation would settle
it ``unknown_after_crash``, never run it again; the result of the call before
it must be there too (a result is durable before the next side effect). When
the turn has ended the whole log is durable. The SIGKILL tests cannot see any
of this (a killed process loses nothing it wrote), so it is checked here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kun.app.session import open_service
from kun.contracts import events as ev
from kun.contracts.items import ToolCall, ToolResult
from kun.contracts.model import CompletedChunk, ToolCallCompleteChunk, ToolCallDeltaChunk
from kun.contracts.threads import ThreadSettings
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.store import jsonl
from kun.store.codec import decode_line
from kun.tools.base import ToolOutput, make_spec
from kun.tools.host import ToolHost

pytestmark = pytest.mark.anyio


class _Durable:
    """The length of the log's fsynced prefix, kept by the wrapped fsync."""

    def __init__(self) -> None:
        self.size = 0
        self.fsyncs = 0
        self.log: Path | None = None

    def prefix(self) -> list[ev.Event]:
        assert self.log is not None
        return [decode_line(line) for line in self.log.read_bytes()[: self.size].splitlines()]


def _two_calls() -> list[Any]:
    chunks: list[Any] = []
    for index in (0, 1):
        args = msgspec.json.encode({"n": 10 + index})
        call_id = f"pair_{index}"
        chunks += [
            ToolCallDeltaChunk(index=index, call_id=call_id, name="probe", arguments=args.decode()),
            ToolCallCompleteChunk(
                index=index,
                call_id=call_id,
                name="probe",
                arguments=msgspec.Raw(args),
                arguments_text=args.decode(),
            ),
        ]
    return [*chunks, CompletedChunk(stop_reason="tool_calls")]


async def test_a_tool_runs_only_after_its_start_and_the_previous_result_are_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    durable = _Durable()
    real = jsonl._fsync

    def fsync(fd: int) -> None:
        size = os.fstat(fd).st_size
        real(fd)
        durable.size = size
        durable.fsyncs += 1

    monkeypatch.setattr(jsonl, "_fsync", fsync)
    seen: list[str] = []
    checked: list[str] = []

    class Probe:
        spec = make_spec("probe", "Checks the durable log.", {"n": {"type": "integer"}}, ["n"])
        effect = "read"

        async def run(self, args: dict[str, Any], ctx: Any) -> ToolOutput:
            events = durable.prefix()
            started = {e.call_id for e in events if isinstance(e, ev.ToolCallStarted)}
            created = {
                e.item.call_id
                for e in events
                if isinstance(e, ev.ItemCreated) and isinstance(e.item, ToolCall)
            }
            results = {
                e.item.call_id
                for e in events
                if isinstance(e, ev.ItemCompleted) and isinstance(e.item, ToolResult)
            }
            assert ctx.call_id in started and ctx.call_id in created
            assert set(seen) <= results, "an earlier result is not durable yet"
            seen.append(ctx.call_id)
            checked.append(ctx.call_id)
            return ToolOutput(output="ok")

    script = [
        tool_reply("probe", {"n": 0}, call_id="c0"),
        tool_reply("probe", {"n": 1}, call_id="c1"),
        _two_calls(),
        tool_reply("probe", {"n": 2}, call_id="c2"),
        text_reply("done"),
    ]
    settings = ThreadSettings(workspace=str(tmp_path), approval_policy="on-request")
    home = tmp_path / "home"
    async with open_service(home, ScriptedModelClient(script), tools=ToolHost([Probe()])) as svc:
        thread_id = await svc.create_thread(settings)
        durable.log = next(home.rglob("events.jsonl"))
        turn_id = await svc.start_turn(thread_id, "go")
        turn = await svc.wait_turn(thread_id, turn_id)
        assert turn.status == "completed"
        assert durable.size == durable.log.stat().st_size, "the ended turn is not all durable"
    assert checked == ["c0", "c1", "pair_0", "pair_1", "c2"]
