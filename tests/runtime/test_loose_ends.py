"""Loose ends of the loop (issue 12, item 8): steering that must not be lost,
a broken stream's partial text, an idle timeout before any output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from kun.contracts import events as ev
from kun.contracts.items import AssistantText, ErrorItem, UserMessage
from kun.contracts.model import (
    ErrorChunk,
    ModelRequest,
    ModelStreamChunk,
    TextDeltaChunk,
)
from kun.domain.history import ModelEntry, UserEntry, repair_history
from kun.domain.reduce import replay
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.context import TurnLimits
from kun.runtime.errors import TurnNotRunning
from kun.runtime.steering import SteeringQueue
from kun.store.jsonl import JsonlEventStore
from tests.model.fake_http import Script, Stream, client, sse
from tests.model.support import fixture
from tests.runtime.support import SlowTool, harness, host_with

pytestmark = pytest.mark.anyio

IDLE = "stream_idle_timeout"


def _log(home: Path, thread_id: str) -> list[ev.Event]:
    return list(JsonlEventStore(home).read(thread_id))


async def test_steering_during_the_step_the_limit_ends_is_recorded_not_lost(
    tmp_path: Path,
) -> None:
    """The turn may take no more steps, so the steering cannot reach the
    model in this turn: it is recorded as a steered user message before the
    turn fails, and the next turn's model reads it."""
    started = anyio.Event()
    release = anyio.Event()
    tools = host_with(SlowTool(release=release, started=started))
    script = [tool_reply("slow"), text_reply("next turn")]
    async with harness(tmp_path, script, tools=tools, limits=TurnLimits(max_steps=1)) as h:
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await started.wait()
        await h.service.steer_turn(h.thread_id, turn_id, "also check b.py")
        release.set()
        turn = await h.service.wait_turn(h.thread_id, turn_id)
        assert turn.status == "failed"
        steered = [i for i in turn.items if isinstance(i, UserMessage) and i.steered]
        assert [m.text for m in steered] == ["also check b.py"]
        await h.run("go on")
        texts = [i.text for i in h.model.requests[-1].history if isinstance(i, UserMessage)]
        assert "also check b.py" in texts
        assert replay(_log(h.home, h.thread_id)).turns == h.state().turns


async def test_steering_after_the_last_step_settled_is_refused_as_not_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the loop's decision to end and ``turn_completed`` a push is
    refused as :class:`TurnNotRunning` (409 ``turn_not_running``), the same
    answer as after the turn ended, and nothing is recorded for it. The steer
    is sent the moment the queue is sealed: its refusal comes before its
    first await, so the coroutine's first step runs inside that window."""
    refused: list[BaseException] = []
    seal = SteeringQueue.close_if_empty
    async with harness(tmp_path, [text_reply("done")]) as h:

        def sealing_then_steered(queue: SteeringQueue) -> bool:
            ended = seal(queue)
            steer = h.service.steer_turn(h.thread_id, queue.turn_id, "too late")
            try:
                steer.send(None)
            except TurnNotRunning as exc:
                refused.append(exc)
            finally:
                steer.close()
            return ended

        monkeypatch.setattr(SteeringQueue, "close_if_empty", sealing_then_steered)
        turn = await h.run("work")
        assert turn.status == "completed" and turn.steered == 0
        assert len(refused) == 1
        assert not any(isinstance(e, ev.TurnSteered) for e in _log(h.home, h.thread_id))


async def test_a_broken_stream_keeps_its_text_as_failed_and_out_of_history(
    tmp_path: Path,
) -> None:
    broken = [
        TextDeltaChunk(text="The answer is"),
        ErrorChunk(message="cut", code="stream_truncated"),
    ]
    async with harness(tmp_path, [broken, text_reply("again")]) as h:
        turn = await h.run("question")
        assert turn.status == "failed"
        text = next(i for i in turn.items if isinstance(i, AssistantText))
        assert text.status == "failed" and text.text == "The answer is"
        await h.run("try again")
        sent = repair_history(h.model.requests[-1].history)
        assert not any(isinstance(e, ModelEntry) for e in sent)
        users = [e.item for e in sent if isinstance(e, UserEntry)]
        assert [u.text for u in users if isinstance(u, UserMessage)] == ["question", "try again"]


async def test_an_idle_timeout_before_any_output_is_retried_once(tmp_path: Path) -> None:
    stalled = [ErrorChunk(message="no data for 450 s", code=IDLE)]
    async with harness(tmp_path, [stalled, text_reply("here")]) as h:
        turn = await h.run("question")
        assert turn.status == "completed"
        assert len(h.model.requests) == 2
        warnings = [e for e in _log(h.home, h.thread_id) if isinstance(e, ev.WarningEvent)]
        assert [w.code for w in warnings] == ["stream_idle_retry"]
        assert [i.text for i in turn.items if isinstance(i, AssistantText)] == ["here"]


async def test_a_second_idle_timeout_fails_the_turn(tmp_path: Path) -> None:
    stalled = [ErrorChunk(message="no data for 450 s", code=IDLE)]
    async with harness(tmp_path, [stalled, stalled, text_reply("never")]) as h:
        turn = await h.run("question")
        assert turn.status == "failed"
        assert len(h.model.requests) == 2
        error = next(i for i in turn.items if isinstance(i, ErrorItem))
        assert error.code == IDLE


async def test_an_idle_timeout_after_output_is_not_retried(tmp_path: Path) -> None:
    async def stalls_midway(request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        yield TextDeltaChunk(text="half an ans")
        yield ErrorChunk(message="no data for 450 s", code=IDLE)

    async with harness(tmp_path, [stalls_midway, text_reply("never")]) as h:
        turn = await h.run("question")
        assert turn.status == "failed"
        assert len(h.model.requests) == 1
        assert not any(isinstance(e, ev.WarningEvent) for e in _log(h.home, h.thread_id))


async def test_steering_pending_when_a_stream_fails_is_recorded(tmp_path: Path) -> None:
    streaming = anyio.Event()
    release = anyio.Event()

    async def fails(request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        yield TextDeltaChunk(text="part")
        streaming.set()
        await release.wait()
        yield ErrorChunk(message="overloaded", code="overloaded_error")

    async with harness(tmp_path, [fails]) as h:
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await streaming.wait()
        await h.service.steer_turn(h.thread_id, turn_id, "and b.py")
        release.set()
        turn = await h.service.wait_turn(h.thread_id, turn_id)
        assert turn.status == "failed" and turn.steered == 1
        steered = [i.text for i in turn.items if isinstance(i, UserMessage) and i.steered]
        assert steered == ["and b.py"]


async def test_steering_unread_when_the_turn_is_interrupted_is_recorded(tmp_path: Path) -> None:
    started = anyio.Event()
    tools = host_with(SlowTool(started=started))
    async with harness(tmp_path, [tool_reply("slow"), text_reply("next")], tools=tools) as h:
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await started.wait()
        await h.service.steer_turn(h.thread_id, turn_id, "stop and check b.py")
        with anyio.fail_after(5):
            await h.service.interrupt_turn(h.thread_id, turn_id)
        turn = h.turn(turn_id)
        assert turn.status == "aborted"
        steered = [i.text for i in turn.items if isinstance(i, UserMessage) and i.steered]
        assert steered == ["stop and check b.py"]
        await h.run("go on")
        texts = [i.text for i in h.model.requests[-1].history if isinstance(i, UserMessage)]
        assert texts == ["work", "stop and check b.py", "go on"]
        assert replay(_log(h.home, h.thread_id)).turns == h.state().turns


async def test_a_provider_silent_past_the_idle_timeout_is_asked_again(tmp_path: Path) -> None:
    """End to end over HTTP (httpx.MockTransport, a 50 ms idle timeout): the
    first response sends headers and then nothing; the step is sent again."""
    answer = fixture("cc_plain_text.sse")
    script = Script(sse(Stream([], hang=True)), sse(answer))
    model = client(script, idle_timeout=0.05)
    async with harness(tmp_path, []) as h:
        turn = await h.run("hi", model=model)
        assert turn.status == "completed", turn.items
        assert len(script.requests) == 2
        assert [i.text for i in turn.items if isinstance(i, AssistantText)] == ["Hello, world!"]
        codes = [e.code for e in _log(h.home, h.thread_id) if isinstance(e, ev.WarningEvent)]
        assert codes == ["stream_idle_retry"]
