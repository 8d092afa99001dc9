"""The control channel in one process (:mod:`kun.runtime.control_channel`):
a real TurnService on a JSONL home serves the thread's socket while a turn
runs, and :func:`ask` gets the answers the HTTP API gives — the turn
steered or stopped; no running turn; a settled turn 409; an unknown turn
404; a blank text 422; a line that is no request 400. A second listener
on the same thread never takes the socket over, a caller that never sends
its request does not hold the block's end, and the socket is gone after
it. (The harness's home is long: its socket is in the private folder
under the temp dir, so that path is exercised here.)"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import msgspec
import pytest
from anyio.abc import SocketStream

from kun.contracts.items import UserMessage
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.control_channel import (
    Answer,
    Interrupt,
    Refusal,
    Steer,
    ask,
    control_path,
    serve_control,
)
from tests.runtime.support import Harness, SlowTool, harness, host_with

pytestmark = pytest.mark.anyio


def _refused(answer: Answer | None) -> tuple[int, str]:
    assert answer is not None and answer.error is not None, answer
    return answer.error.status, answer.error.code


async def _held_turn(h: Harness, started: anyio.Event) -> str:
    turn_id = await h.service.start_turn(h.thread_id, "work")
    with anyio.fail_after(10):
        await started.wait()
    return turn_id


async def test_steer_and_interrupt_answer_as_the_api_does(tmp_path: Path) -> None:
    release, started, stuck = anyio.Event(), anyio.Event(), anyio.Event()
    script = [tool_reply("slow"), text_reply("noted"), tool_reply("stuck")]
    tools = host_with(
        SlowTool(release=release, started=started), SlowTool(name="stuck", started=stuck)
    )
    async with harness(tmp_path, script, tools=tools) as h:
        path = control_path(h.home, h.thread_id)
        async with serve_control(h.service, h.thread_id) as door:
            await door.ready.wait()
            assert door.listening
            assert _refused(await ask(h.home, h.thread_id, Steer(text="x"))) == (
                409,
                "no_running_turn",
            )
            turn_id = await _held_turn(h, started)
            assert await ask(h.home, h.thread_id, Steer(text="also b.py")) == Answer(turn_id)
            assert _refused(await ask(h.home, h.thread_id, Steer(text="  "))) == (422, "blank")
            unknown = Interrupt(turn_id="turn_nope")
            assert _refused(await ask(h.home, h.thread_id, unknown)) == (404, "turn_not_found")
            release.set()
            turn = await h.service.wait_turn(h.thread_id, turn_id)
            assert [i.text for i in turn.items if isinstance(i, UserMessage) and i.steered] == [
                "also b.py"
            ]
            settled = Interrupt(turn_id=turn_id)
            assert _refused(await ask(h.home, h.thread_id, settled)) == (409, "turn_not_running")

            second = await _held_turn(h, stuck)
            stopped = await ask(h.home, h.thread_id, Interrupt(discard=True))
            assert stopped == Answer(second, "aborted")
            assert h.service.running_turn(h.thread_id) is None
        assert not path.exists()
        assert await ask(h.home, h.thread_id, Steer(text="x")) is None


async def test_a_line_that_is_no_request_is_refused(tmp_path: Path) -> None:
    async with harness(tmp_path, []) as h, serve_control(h.service, h.thread_id) as door:
        await door.ready.wait()
        path = control_path(h.home, h.thread_id)
        async with await anyio.connect_unix(path) as stream:
            await stream.send(b'{"op": "rewind"}\n')
            answer = msgspec.json.decode(await stream.receive(), type=Answer)
        assert answer.error is not None
        assert (answer.error.status, answer.error.code) == (400, "invalid_request")


async def test_a_live_socket_is_never_taken_over(tmp_path: Path) -> None:
    async with harness(tmp_path, []) as h:
        path = control_path(h.home, h.thread_id)
        async with serve_control(h.service, h.thread_id) as door:
            await door.ready.wait()
            first = path.stat().st_ino
            async with serve_control(h.service, h.thread_id) as second:
                await second.ready.wait()
                assert not second.listening and path.stat().st_ino == first
            assert path.stat().st_ino == first
            refused = await ask(h.home, h.thread_id, Steer(text="x"))
            assert refused is not None and refused.error == Refusal(
                409, "no_running_turn", f"thread {h.thread_id} has no running turn"
            )
        assert not path.exists()


async def test_a_silent_caller_does_not_hold_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kun.runtime.control_channel.READ_SECONDS", 600.0)
    monkeypatch.setattr("kun.runtime.control_channel.GRACE_SECONDS", 600.0)
    async with harness(tmp_path, []) as h:
        path = control_path(h.home, h.thread_id)
        with anyio.fail_after(60):  # a failsafe far below the 600 s read timeout and grace
            async with serve_control(h.service, h.thread_id) as door:
                await door.ready.wait()
                silent = await anyio.connect_unix(path)
                await anyio.sleep(0.05)
            await silent.aclose()
        assert not path.exists()


async def test_only_the_threads_writer_listens(tmp_path: Path) -> None:
    """A thread whose writer lock another process holds gets no socket
    from this one (a thread nobody holds does: a turn started here would
    take the lock)."""
    from tests.portable.conftest import stored_thread
    from tests.store.test_jsonl import HOLD_LOCK

    async with harness(tmp_path, []) as h:
        await anyio.to_thread.run_sync(stored_thread, h.home, "thr_elsewhere")
        holder = await anyio.open_process(
            [sys.executable, "-c", HOLD_LOCK, str(h.home), "thr_elsewhere"]
        )
        async with holder:
            assert holder.stdout is not None and holder.stdin is not None
            with anyio.fail_after(20):
                assert (await holder.stdout.receive()).startswith(b"ready")
            async with serve_control(h.service, "thr_elsewhere") as elsewhere:
                await elsewhere.ready.wait()
                assert not elsewhere.listening
                assert not control_path(h.home, "thr_elsewhere").exists()
            await holder.stdin.aclose()
        async with serve_control(h.service, h.thread_id) as door:
            await door.ready.wait()
            assert door.listening and control_path(h.home, h.thread_id).exists()


class _Attempts:
    """Counts the client's connection attempts (made in the CLI's own event
    loop, in a worker thread) and says when one found nobody listening."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import threading

        from kun.runtime import control_channel

        self.count = 0
        self.missed = threading.Event()
        once = control_channel._connect_once

        async def counted(path: Path) -> SocketStream | None:
            self.count += 1
            stream = await once(path)
            if stream is None:
                self.missed.set()
            return stream

        monkeypatch.setattr(control_channel, "_connect_once", counted)
        monkeypatch.setattr(control_channel, "SOCKET_WAIT_SECONDS", 60.0)  # a failsafe only


async def test_a_steer_sent_before_the_socket_binds_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn logged as running by its live writer (this process holds the
    lock), socket not bound yet: ``kun steer`` retries until it binds
    instead of answering "runs in process N". The listener opens only once
    the client has missed it, so no timing decides the outcome."""
    from kun.app.local_steering import reach
    from kun.cli.steering import steered_line

    release, started = anyio.Event(), anyio.Event()
    script = [tool_reply("slow"), text_reply("noted")]
    attempts = _Attempts(monkeypatch)
    async with harness(
        tmp_path, script, tools=host_with(SlowTool(release=release, started=started))
    ) as h:
        turn_id = await _held_turn(h, started)
        there = "steer it by typing"
        async with anyio.create_task_group() as tg:
            result: list[str] = []
            answered = anyio.Event()

            async def client() -> None:
                request = Steer(text="also b.py", turn_id=turn_id)
                answer = await reach(h.home, h.thread_id, turn_id, request, there)
                result.append(steered_line(h.thread_id, answer.turn_id or ""))
                answered.set()

            tg.start_soon(client)
            with anyio.fail_after(30):
                await anyio.to_thread.run_sync(attempts.missed.wait)
            async with serve_control(h.service, h.thread_id) as door:
                await door.ready.wait()
                assert door.listening
                with anyio.fail_after(30):
                    await answered.wait()
        assert result == [steered_line(h.thread_id, turn_id)]
        assert attempts.count >= 2
        release.set()
        await h.service.wait_turn(h.thread_id, turn_id)


async def test_no_running_turn_answers_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No turn in the log: ``kun interrupt`` refuses without trying the
    socket (the writer, this process, is alive, but there is nothing to
    wait for)."""
    from click.testing import CliRunner

    from kun.entry import cli

    attempts = _Attempts(monkeypatch)
    async with harness(tmp_path, []) as h:
        args = ["interrupt", h.thread_id, "--home", str(h.home)]
        result = await anyio.to_thread.run_sync(CliRunner().invoke, cli, args)
    assert result.exit_code == 1
    assert result.stderr == f"kun: error: thread {h.thread_id} has no running turn\n"
    assert attempts.count == 0


async def test_a_turn_its_dead_writer_left_open_answers_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running turn in the log but nobody holding the writer lock (the
    log copied into another home, as a crashed kun leaves it): nothing
    will ever listen, so one attempt and the "left open" line."""
    import shutil

    from kun.app.local_steering import STEER_THERE, reach
    from kun.errors import UserMistake
    from kun.store.paths import log_path

    release, started = anyio.Event(), anyio.Event()
    attempts = _Attempts(monkeypatch)
    other = tmp_path / "crashed"
    async with harness(
        tmp_path, [tool_reply("slow")], tools=host_with(SlowTool(release=release, started=started))
    ) as h:
        turn_id = await _held_turn(h, started)
        copy = log_path(other, h.thread_id)
        copy.parent.mkdir(parents=True)
        shutil.copyfile(log_path(h.home, h.thread_id), copy)
        with pytest.raises(UserMistake, match="left open by a kun that stopped"):
            await reach(other, h.thread_id, turn_id, Steer(text="x", turn_id=turn_id), STEER_THERE)
        release.set()
    assert attempts.count == 1
