"""A thread of 300 turns through the real loop, against a scripted model
whose context window is small: it compacts before a step whenever the
estimated prompt passes ``compact_at`` of the window, keeps working through
many compactions, never sends a request over the window or a call without
its result, and its log replays to the history the last request sent."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.contracts.items import Compaction, ToolCall, ToolResult, UserMessage
from kun.contracts.model import ModelRequest, ModelStreamChunk
from kun.domain.compaction import estimate_request_tokens, visible_history
from kun.domain.reduce import replay
from kun.model.scripted import text_reply, tool_reply
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import harness
from tests.runtime.test_compaction_loop import _is_summariser, _summary

pytestmark = pytest.mark.anyio

TURNS = 300
ROOM = 1500
"""Tokens of history the window holds besides the tools and prompt."""


def _reply(request: ModelRequest) -> list[ModelStreamChunk]:
    """A summary for the summariser; otherwise read a file, then answer."""
    if _is_summariser(request):
        return _summary("Goal: the numbered tasks. Done: every task up to the latest one.")
    last = request.history[-1]
    if isinstance(last, ToolResult):
        return text_reply(f"Task done after reading a.py ({len(request.history)} items). " * 3)
    assert isinstance(last, UserMessage)
    return tool_reply("read_file", {"path": "a.py"}, call_id=f"call_{last.id}")


async def test_300_turns_keep_working_through_compactions_and_replay(tmp_path: Path) -> None:
    async with harness(tmp_path, [_reply] * 3 * TURNS) as h:
        first = await h.run("Task 0: read a.py.")
        assert first.status == "completed"
        base = estimate_request_tokens(h.model.requests[0])
        window = int((base + ROOM) / 0.8)
        h.service.context_windows = lambda provider, model: window
        with anyio.fail_after(120):
            for n in range(1, TURNS):
                turn = await h.run(f"Task {n}: read a.py again and say what it prints. " * 2)
                assert turn.status == "completed", (n, turn.error)
        requests = h.model.requests
        events = list(JsonlEventStore(h.home).read(h.thread_id))
        state = h.state()
    summaries = [r for r in requests if _is_summariser(r)]
    steps = [r for r in requests if not _is_summariser(r)]
    compactions = [i for t in state.turns for i in t.items if isinstance(i, Compaction)]
    assert len(compactions) == len(summaries) >= 10, len(compactions)
    assert len(steps) == 2 * TURNS
    for request in requests:
        assert estimate_request_tokens(request) <= window
    for step in steps:
        calls = {i.call_id for i in step.history if isinstance(i, ToolCall)}
        results = {i.call_id for i in step.history if isinstance(i, ToolResult)}
        assert calls == results
    assert replay(events).turns == state.turns
    last = steps[-1].history
    assert isinstance(last[0], Compaction) and last[0] == compactions[-1]
    assert tuple(visible_history(replay(events).visible_turns))[: len(last)] == last
