"""``kun steer`` and ``kun interrupt`` reach a turn of the interactive
session from another process, through the thread's control socket: the
session (in a real pseudo-terminal, against the loopback provider) shows
the steer, the model gets it in its next request, and an interrupt stops
the next turn while the session goes on. Each turn is held by a ``bash``
tool waiting for a file the test creates, never by timing."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import msgspec
import pytest

from kun.cli.steering import interrupted_line, steered_line
from kun.contracts import events as ev
from kun.model.scripted import tool_reply
from kun.runtime.control_channel import control_path
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.terminal_support import (
    TIMEOUT,
    answer,
    events_of,
    finish,
    kun,
    only_thread,
    serve,
    spawn,
    write_config,
)

pytestmark = pytest.mark.slow

ENTER = "\r"


def _waits_for(name: str) -> FakeResponse:
    command = f"while [ ! -e {name} ]; do sleep 0.05; done; echo went"
    return FakeResponse(chunks=tuple(tool_reply("bash", {"command": command})))


def _held(provider: FakeProvider, asked: int, home: Path) -> tuple[str, str]:
    """Once the session made request ``asked`` and listens: the thread and
    its running turn."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if len(provider.requests) >= asked and _listens(home):
            thread = only_thread(home)
            started = [e for e in events_of(home, thread) if isinstance(e, ev.TurnStarted)]
            return thread, started[-1].turn_id
        time.sleep(0.05)
    raise AssertionError("the session never held its turn")


def _listens(home: Path) -> bool:
    threads = list((home / "threads").glob("*")) if (home / "threads").is_dir() else []
    if len(threads) != 1:
        return False
    with socket.socket(socket.AF_UNIX) as sock:
        try:
            sock.connect(str(control_path(home, threads[0].name)))
        except OSError:
            return False
    return True


def test_a_session_turn_is_steered_then_one_is_interrupted(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    workspace.mkdir()
    script = [_waits_for("go"), answer("steered answer"), _waits_for("never")]
    with serve(script) as provider:
        config = write_config(tmp_path, provider.base_url)
        args = ["--approval", "full-auto", "--config", str(config), "--home", str(home)]
        child = spawn(args, cwd=workspace)
        child.expect("Ctrl-D leaves")
        child.send("work" + ENTER)
        thread, turn = _held(provider, 1, home)
        steered = kun("steer", thread, "also say hello", "--home", str(home))
        assert steered[:2] == (0, steered_line(thread, turn) + "\n"), steered
        (workspace / "go").touch()
        child.expect("steered answer")
        child.expect("turn completed")

        child.send("more" + ENTER)
        thread, second = _held(provider, 3, home)
        stopped = kun("interrupt", thread, "--home", str(home))
        assert stopped[:2] == (0, interrupted_line(thread, second, "aborted") + "\n"), stopped
        child.expect("aborted")
        child.send("/quit" + ENTER)
        code, text = finish(child)
    assert code == 0 and "Traceback" not in text, text
    assert not control_path(home, thread).exists()
    events = events_of(home, thread)
    assert [(e.turn_id, e.text) for e in events if isinstance(e, ev.TurnSteered)] == [
        (turn, "also say hello")
    ]
    assert [e.turn_id for e in events if isinstance(e, ev.TurnAborted)] == [second]
    asked = msgspec.json.encode(provider.requests[1].json).decode()
    assert "also say hello" in asked
