"""For random model behaviour, every settled turn leaves a log that keeps the
SPEC §4 invariants: a valid replay equal to the live projection, nothing
open, one result per tool call, usage equal to the sum of usage events."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import OPEN_STATUSES, ToolCall, ToolResult
from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelStreamChunk,
    TextDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.domain.reduce import replay
from kun.domain.usage import sum_usage
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import CrashTool, calls, harness, host_with

TOOLS = [
    ("read_file", {"path": "a.py"}),
    ("read_file", {"path": "missing.py"}),
    ("list_dir", {}),
    ("grep", {"pattern": "print"}),
    ("no_such_tool", {}),
    ("crash", {}),
]

step_kinds = st.sampled_from(["text", "tools", "error", "length"])


@st.composite
def responses(draw: st.DrawFn) -> list[list[ModelStreamChunk]]:
    script: list[list[ModelStreamChunk]] = []
    for step in range(draw(st.integers(1, 5))):
        kind = draw(step_kinds)
        usage = UsageChunk(
            usage=UsageSnapshot(
                prompt_tokens=draw(st.integers(0, 999)),
                completion_tokens=draw(st.integers(0, 99)),
                cost_usd=draw(st.one_of(st.none(), st.just(0.001))),
            )
        )
        if kind == "tools":
            chosen = draw(st.lists(st.sampled_from(TOOLS), min_size=1, max_size=3))
            script.append([usage, *calls(*chosen, prefix=f"s{step}")])
            continue
        text = [TextDeltaChunk(text=t) for t in draw(st.lists(st.text(max_size=5), max_size=3))]
        if kind == "error":
            script.append([*text, ErrorChunk(message="boom", code="http_500")])
        else:
            stop = "length" if kind == "length" else "stop"
            script.append([*text, usage, CompletedChunk(stop_reason=stop)])
        break
    return script


async def _run(script: list[Any], abort_at: int | None, root: Path) -> list[ev.Event]:
    async with harness(root, script, tools=host_with(CrashTool())) as h:
        turn_id = await h.service.start_turn(h.thread_id, "go")
        if abort_at is not None:
            seen = 0
            async for _ in h.service.recorder.subscribe(h.thread_id):
                seen += 1
                if seen >= abort_at or h.service.running_turn(h.thread_id) is None:
                    break
            if h.service.running_turn(h.thread_id) is not None:
                await h.service.interrupt_turn(h.thread_id, turn_id)
        with anyio.fail_after(10):
            await h.service.wait_turn(h.thread_id, turn_id)
        live = h.state()
        events = list(JsonlEventStore(h.home).read(h.thread_id))
        assert replay(events) == live
        return events


@settings(max_examples=40)
@given(responses(), st.one_of(st.none(), st.integers(1, 40)))
def test_invariants_hold_after_every_turn(script: list[Any], abort_at: int | None) -> None:
    with tempfile.TemporaryDirectory() as root:
        events = anyio.run(_run, script, abort_at, Path(root))
    state = replay(events)
    (turn,) = state.turns
    assert turn.settled
    assert all(item.status not in OPEN_STATUSES for item in turn.items)
    assert state.pending_approvals == () and state.pending_user_inputs == ()
    results = [i.call_id for i in turn.items if isinstance(i, ToolResult)]
    for call in (i for i in turn.items if isinstance(i, ToolCall)):
        if call.status in ("aborted", "failed") and call.call_id not in results:
            continue
        assert results.count(call.call_id) == 1, (call, results)
    usages = [e.usage for e in events if isinstance(e, ev.Usage)]
    assert state.usage == sum_usage(usages)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
