"""A compaction the user asks for (``TurnService.start_compaction``): its own
short turn, refused while a turn runs, not started when there is nothing to
summarise; rewound like any turn; a summarising request refused as too
large is sent once more without its attachments."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.contracts.items import Compaction, ErrorItem, UserMessage, WarningItem
from kun.contracts.model import ErrorChunk, ModelStreamChunk
from kun.domain.reduce import replay
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.compact_turn import COMPACTED, COMPACTION_FAILED
from kun.runtime.errors import ThreadBusy
from kun.runtime.media import ATTACHMENTS_DROPPED
from kun.store.jsonl import JsonlEventStore
from tests.runtime.support import Harness, SlowTool, harness, host_with
from tests.runtime.test_compaction_loop import LONG, _is_summariser, _summary
from tests.runtime.test_too_large_loop import _attachments, _photo, _too_large

pytestmark = pytest.mark.anyio


async def _compact(h: Harness) -> str:
    turn_id = await h.service.start_compaction(h.thread_id)
    assert turn_id is not None
    with anyio.fail_after(10):
        await h.service.wait_turn(h.thread_id, turn_id)
    return turn_id


async def test_a_compaction_asked_for_is_its_own_turn_and_the_next_request_starts_with_it(
    tmp_path: Path,
) -> None:
    async with harness(tmp_path, [text_reply(LONG), _summary(), text_reply("next")]) as h:
        first = await h.run("hello")
        turn = h.turn(await _compact(h))
        assert turn.status == "completed" and turn.stop_reason == COMPACTED
        (item,) = turn.items
        assert isinstance(item, Compaction) and item.covers_until == first.items[-1].id
        assert _is_summariser(h.model.requests[1])
        assert turn.usage.prompt_tokens == 900
        await h.run("and now?")
        step = h.model.requests[2]
        assert step.history[0] == item
        assert [type(i) for i in step.history[1:]] == [UserMessage]
        events = list(JsonlEventStore(h.home).read(h.thread_id))
    assert replay(events).turns == h.state().turns


async def test_nothing_to_summarise_starts_no_turn(tmp_path: Path) -> None:
    async with harness(tmp_path, [text_reply("hi"), _summary()]) as h:
        assert await h.service.start_compaction(h.thread_id) is None
        await h.run("hello")
        await _compact(h)
        before = h.state().last_seq
        assert await h.service.start_compaction(h.thread_id) is None, "already compacted"
        assert h.state().last_seq == before
        assert len(h.state().turns) == 2


async def test_a_compaction_is_refused_while_a_turn_runs(tmp_path: Path) -> None:
    slow = SlowTool(started=anyio.Event())
    script = [text_reply(LONG), tool_reply("slow", {})]
    async with harness(tmp_path, script, tools=host_with(slow), policy="never") as h:
        await h.run("hello")
        turn_id = await h.service.start_turn(h.thread_id, "wait")
        assert slow.started is not None
        with anyio.fail_after(10):
            await slow.started.wait()
        with pytest.raises(ThreadBusy):
            await h.service.start_compaction(h.thread_id)
        await h.service.interrupt_turn(h.thread_id, turn_id)


async def test_rewinding_the_compaction_turn_sends_the_whole_history_again(
    tmp_path: Path,
) -> None:
    script = [text_reply(LONG), _summary(), text_reply("after"), text_reply("rewound")]
    async with harness(tmp_path, script) as h:
        first = await h.run("hello")
        compaction_turn = await _compact(h)
        await h.run("and now?")
        assert isinstance(h.model.requests[2].history[0], Compaction)
        await h.service.rewind_thread(h.thread_id, compaction_turn)
        await h.run("again")
        history = h.model.requests[3].history
    assert not any(isinstance(i, Compaction) for i in history)
    assert [i.id for i in history[: len(first.items)]] == [i.id for i in first.items]


async def test_a_fork_before_the_compaction_turn_does_not_carry_it(tmp_path: Path) -> None:
    script = [text_reply(LONG), _summary(), text_reply("in the fork")]
    async with harness(tmp_path, script) as h:
        await h.run("hello")
        before = h.state().last_seq
        await _compact(h)
        fork = await h.service.fork_thread(h.thread_id, before)
        turn_id = await h.service.start_turn(fork, "forked")
        with anyio.fail_after(10):
            await h.service.wait_turn(fork, turn_id)
        history = h.model.requests[2].history
    assert not any(isinstance(i, Compaction) for i in history)
    assert len(history) == 3


async def test_a_failed_summary_fails_the_compaction_turn(tmp_path: Path) -> None:
    failed: list[ModelStreamChunk] = [ErrorChunk(code="server_error", message="boom")]
    async with harness(tmp_path, [text_reply(LONG), failed]) as h:
        await h.run("hello")
        turn = h.turn(await _compact(h))
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.code == COMPACTION_FAILED and "boom" in turn.error.message
    assert not any(isinstance(i, Compaction) for i in turn.items)
    assert any(isinstance(i, ErrorItem) for i in turn.items)


async def test_a_summarising_request_too_large_is_sent_again_without_attachments(
    tmp_path: Path,
) -> None:
    photo = _photo(tmp_path)
    script = [text_reply("seen"), _too_large(), _summary()]
    async with harness(tmp_path, script) as h:
        await h.run("look at this", attachments=(photo,))
        turn = h.turn(await _compact(h))
        refused, resent = h.model.requests[1:]
    assert _attachments(refused) == [photo] and _attachments(resent) == []
    assert _is_summariser(resent)
    assert turn.status == "completed"
    warning, compaction = turn.items
    assert isinstance(warning, WarningItem) and warning.code == ATTACHMENTS_DROPPED
    assert isinstance(compaction, Compaction)


async def test_a_summarising_request_too_large_twice_fails(tmp_path: Path) -> None:
    photo = _photo(tmp_path)
    script = [text_reply("seen"), _too_large(), _too_large()]
    async with harness(tmp_path, script) as h:
        await h.run("look at this", attachments=(photo,))
        turn = h.turn(await _compact(h))
        assert len(h.model.requests) == 3
    assert turn.status == "failed" and turn.error is not None
    assert "request_too_large" in turn.error.message
