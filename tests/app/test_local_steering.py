"""A turn another process runs (here: another service over the same home,
holding the thread's lock, with its control socket) is steered and
interrupted through the in-process adapter on that socket; without the
socket the refusal says who runs it and where to type instead."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from kun.app.local import LocalKun, open_home
from kun.app.local_engine import Engine
from kun.app.local_errors import TurnUnreachable
from kun.contracts.items import UserMessage
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.control_channel import serve_control
from kun.runtime.recorder import EventRecorder
from tests.runtime.support import SlowTool, harness, host_with

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def _no_engine(recorder: EventRecorder, workspace: Path | None) -> AsyncIterator[Engine]:
    raise AssertionError("steering another process's turn needs no engine here")
    yield  # pragma: no cover


async def _started(kun: LocalKun, thread: str, turn_id: str) -> None:
    with anyio.fail_after(10):
        while True:
            turn = await kun.turn(thread, turn_id)
            if turn.items:
                return
            await anyio.sleep(0.01)


async def test_another_processs_turn_is_steered_and_interrupted(tmp_path: Path) -> None:
    release, started, stuck = anyio.Event(), anyio.Event(), anyio.Event()
    script = [tool_reply("slow"), text_reply("noted"), tool_reply("stuck")]
    tools = host_with(
        SlowTool(release=release, started=started), SlowTool(name="stuck", started=stuck)
    )
    async with (
        harness(tmp_path, script, tools=tools) as h,
        open_home(h.home, _no_engine) as kun,
        serve_control(h.service, h.thread_id) as door,
    ):
        await door.ready.wait()
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await started.wait()
        await _started(kun, h.thread_id, turn_id)
        steered = await kun.steer(h.thread_id[:12], turn_id, "also b.py")
        assert steered.turn_id == turn_id and steered.queued
        release.set()
        turn = await h.service.wait_turn(h.thread_id, turn_id)
        assert [i.text for i in turn.items if isinstance(i, UserMessage) and i.steered] == [
            "also b.py"
        ]
        second = await h.service.start_turn(h.thread_id, "again")
        await stuck.wait()
        await _started(kun, h.thread_id, second)
        stopped = await kun.interrupt(h.thread_id, second)
        assert stopped.turn_id == second and stopped.status == "aborted"


async def test_without_its_socket_the_refusal_names_the_process(tmp_path: Path) -> None:
    started = anyio.Event()
    tools = host_with(SlowTool(started=started))
    async with (
        harness(tmp_path, [tool_reply("slow")], tools=tools) as h,
        open_home(h.home, _no_engine) as kun,
    ):
        turn_id = await h.service.start_turn(h.thread_id, "work")
        await started.wait()
        await _started(kun, h.thread_id, turn_id)
        with pytest.raises(TurnUnreachable, match=r"runs in process \d+, which alone can reach"):
            await kun.steer(h.thread_id, turn_id, "also b.py")
        await h.service.interrupt_turn(h.thread_id, turn_id)
