"""``kun steer`` and ``kun interrupt`` without ``--server``: a real ``kun
run`` (its model the fake provider) is reached from other ``kun``
processes through the thread's control socket
(:mod:`kun.runtime.control_channel`).

The turn is held open by a ``bash`` tool that waits for a file the test
creates, so nothing depends on timing. A steer is recorded as
``turn_steered`` and is in the model's next request; an interrupt stops
the turn (``turn_aborted``) and the run exits; both print the lines they
print with ``--server``. The socket is 0600, replaces a dead process's,
is not taken by a second ``kun run`` on the thread, and is gone when the
run ends; a stale one with nobody behind it gets today's one-line refusal.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from click.testing import CliRunner

from kun.cli.steering import interrupted_line, steered_line
from kun.contracts import events as ev
from kun.entry import cli
from kun.model.scripted import tool_reply
from kun.runtime.control_channel import control_path
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.portable.conftest import stored_thread
from tests.terminal_support import answer, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WAIT = "while [ ! -e go ]; do sleep 0.05; done; echo went"


@contextmanager
def short_home() -> Iterator[Path]:
    """A home whose socket path fits a socket address (pytest's tmp_path is
    too long: the socket would move to the temp dir)."""
    folder = Path(tempfile.mkdtemp(prefix="kun", dir="/tmp"))
    try:
        yield folder / "h"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


@dataclass
class Running:
    home: Path
    workspace: Path
    config: Path
    provider: FakeProvider

    async def kun(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return await anyio.run_process(
            [sys.executable, "-m", "kun", *args, "--home", str(self.home)],
            check=False,
            env=_environ(),
            stdin=subprocess.DEVNULL,
        )

    def run_command(self, *args: str) -> list[str]:
        return [
            sys.executable, "-m", "kun", "run", *args, "--approval", "full-auto",
            "--config", str(self.config), "--home", str(self.home),
            "--workspace", str(self.workspace),
        ]  # fmt: skip

    def events(self, thread_id: str) -> list[ev.Event]:
        return list(JsonlEventStore(self.home).read(thread_id))

    async def held(self, asked: int) -> None:
        """Wait until the run has made its model request ``asked`` (the
        tool that waits for ``go`` then runs)."""
        with anyio.fail_after(30):
            while len(self.provider.requests) < asked:  # noqa: ASYNC110 (another process)
                await anyio.sleep(0.05)


@asynccontextmanager
async def running(tmp_path: Path, script: list[FakeResponse]) -> AsyncIterator[Running]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with short_home() as home:
        async with FakeProvider(script, format="chat_completions") as provider:
            config = write_config(tmp_path, provider.base_url)
            yield Running(home, workspace, config, provider)


def _waiting_tool() -> FakeResponse:
    return FakeResponse(chunks=tuple(tool_reply("bash", {"command": WAIT})))


def _thread_of(home: Path) -> str:
    (thread_id,) = JsonlEventStore(home).list_threads()
    return thread_id


def _stale_socket(path: Path) -> None:
    """What a killed process leaves: a socket file nobody listens on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))


async def _listening(home: Path, thread_id: str, process: Process) -> Path:
    """The thread's control socket, once the run answers on it."""
    path = control_path(home, thread_id)
    with anyio.fail_after(30):
        while True:
            assert process.returncode is None
            try:
                stream = await anyio.connect_unix(path)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return path


@asynccontextmanager
async def started(command: list[str]) -> AsyncIterator[Process]:
    """The run, killed if the test fails while it still waits."""
    process = await anyio.open_process(command, env=_environ())
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()


async def test_a_running_kun_run_is_steered_and_keeps_its_socket(tmp_path: Path) -> None:
    script = [answer("one"), _waiting_tool(), answer("done")]
    async with running(tmp_path, script) as r:
        first = await anyio.run_process(r.run_command("one"), env=_environ(), check=False)
        assert first.returncode == 0, first.stderr
        thread = _thread_of(r.home)
        path = control_path(r.home, thread)
        assert path.parent == r.home / "threads" / thread
        _stale_socket(path)

        async with started(r.run_command("two", "--thread", thread)) as process:
            await r.held(2)
            await _listening(r.home, thread, process)
            info = path.stat()
            assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600

            second = await anyio.run_process(
                r.run_command("three", "--thread", thread), env=_environ(), check=False
            )
            assert second.returncode == 1 and b"Traceback" not in second.stderr
            assert b"process" in second.stderr and len(r.provider.requests) == 2
            await _listening(r.home, thread, process)

            steered = await r.kun("steer", thread[:12], "also mention b.py")
            turn = [e for e in r.events(thread) if isinstance(e, ev.TurnStarted)][-1].turn_id
            assert (steered.returncode, steered.stdout.decode()) == (
                0,
                steered_line(thread, turn) + "\n",
            ), steered.stderr
            (r.workspace / "go").touch()
            with anyio.fail_after(30):
                assert await process.wait() == 0
        assert not path.exists()
        events = r.events(thread)
        assert [(e.turn_id, e.text) for e in events if isinstance(e, ev.TurnSteered)] == [
            (turn, "also mention b.py")
        ]
        last = r.provider.requests[-1].body
        assert b"also mention b.py" in last and b"went" in last


async def test_a_running_kun_run_is_interrupted(tmp_path: Path) -> None:
    async with running(tmp_path, [_waiting_tool()]) as r:
        async with started(r.run_command("work")) as process:
            await r.held(1)
            thread = _thread_of(r.home)
            path = await _listening(r.home, thread, process)
            turn = [e for e in r.events(thread) if isinstance(e, ev.TurnStarted)][-1].turn_id
            stopped = await r.kun("interrupt", thread, "--discard")
            assert stopped.stdout.decode() == interrupted_line(thread, turn, "aborted") + "\n"
            with anyio.fail_after(30):
                assert await process.wait() == 1
        assert not path.exists()
        aborted = [e for e in r.events(thread) if isinstance(e, ev.TurnAborted)]
        assert [(e.turn_id, e.discard) for e in aborted] == [(turn, True)]

        _stale_socket(path)
        late = await r.kun("steer", thread, "more")
        assert (late.returncode, late.stderr.decode()) == (
            1,
            f"kun: error: thread {thread} has no running turn\n",
        )


def test_a_stale_socket_of_a_turn_left_open_is_the_usual_refusal(tmp_path: Path) -> None:
    with short_home() as home:
        stored_thread(home, "thr_open")
        log = home / "threads" / "thr_open" / "events.jsonl"
        lines = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"".join(lines[:-1]))  # its last turn_completed: the turn is open
        _stale_socket(control_path(home, "thr_open"))
        result = CliRunner().invoke(cli, ["interrupt", "thr_open", "--home", str(home)])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "was left open by a kun that stopped" in result.stderr


def test_a_home_too_long_for_a_socket_address_uses_a_private_folder(tmp_path: Path) -> None:
    home = tmp_path / ("h" * 80)
    path = control_path(home, "thr_0123456789abcdefghjkmnpqrs")
    assert len(str(path)) <= 100 and path.parent.name == f"kun-{os.getuid()}"
    assert path == control_path(home, "thr_0123456789abcdefghjkmnpqrs")
    assert path != control_path(home, "thr_0123456789abcdefghjkmnpqrt")
