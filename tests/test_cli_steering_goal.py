"""``kun run --goal`` is reached on the thread's control socket like any
``kun run``, for each of its turns: the first is steered (the steer is in
the model's next request), the turn kun resumes by itself is interrupted,
which ends the run with the goal still active. In process, so the resume
timer runs on a fake clock; the turns are held by a ``bash`` tool waiting
for a file the test creates."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from kun.cli.run import RunResult, run_prompt
from kun.contracts import events as ev
from kun.model.scripted import text_reply, tool_reply
from kun.runtime import resume
from kun.runtime.control_channel import Answer, Interrupt, Steer, ask
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider
from tests.test_cli_run import _workspace
from tests.test_cli_run_goal import _options, _target

pytestmark = pytest.mark.anyio


def _waits_for(name: str) -> list[object]:
    command = f"while [ ! -e {name} ]; do sleep 0.05; done; echo went"
    return list(tool_reply("bash", {"command": command}))


async def _reached(
    home: Path, provider: FakeProvider, asked: int, request: Steer | Interrupt
) -> tuple[str, Answer]:
    """Once the run made request ``asked``: the thread and the answer of
    its socket to ``request`` (asked again while the turn is not shown yet)."""
    with anyio.fail_after(30):
        while True:
            threads = JsonlEventStore(home).list_threads()
            if len(provider.requests) >= asked and threads:
                answer = await ask(home, threads[0], request)
                if answer is not None:
                    return threads[0], answer
            await anyio.sleep(0.05)


async def test_each_turn_of_a_goal_run_is_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def instant(seconds: float) -> None:
        pass

    monkeypatch.setattr(resume, "clock_sleep", instant)
    workspace = _workspace(tmp_path)
    home = tmp_path / "home"
    script = [_waits_for("go"), text_reply("more to do"), _waits_for("never")]
    ran: list[RunResult] = []
    async with FakeProvider(script, format="chat_completions") as provider:
        options = _options(tmp_path, provider.base_url, goal="make a.py print A")
        options = replace(options, approval="full-auto")

        async def run() -> None:
            ran.append(await run_prompt(_target(tmp_path), options))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            thread, steered = await _reached(home, provider, 1, Steer(text="also b.py"))
            assert steered.error is None and steered.turn_id is not None
            (workspace / "go").touch()
            _, stopped = await _reached(home, provider, 3, Interrupt())
            assert stopped.error is None and stopped.status == "aborted"
            assert stopped.turn_id != steered.turn_id
    (result,) = ran
    assert result.turn.turn_id == stopped.turn_id and result.turn.status == "aborted"
    assert result.goal is not None and result.goal.status == "active"
    assert b"also b.py" in provider.requests[1].body
    events = list(JsonlEventStore(home).read(thread))
    assert [e.turn_id for e in events if isinstance(e, ev.TurnSteered)] == [steered.turn_id]
    assert [e.turn_id for e in events if isinstance(e, ev.TurnAborted)] == [stopped.turn_id]
