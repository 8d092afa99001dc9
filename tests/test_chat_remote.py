"""The interactive session over ``--server URL``, driven in a real
pseudo-terminal against a real ``kun serve`` (and the loopback provider):
a message and its streamed reply, an approval answered, Esc interrupting
the turn on the server, then ``-c`` and ``resume`` back to the thread."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import msgspec
import pexpect
import pytest

from kun.contracts.items import UserMessage
from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeResponse
from tests.server.test_serve import _free_port
from tests.terminal_support import (
    TIMEOUT,
    answer,
    environ,
    events_of,
    finish,
    kun,
    only_thread,
    serve,
    slow_answer,
    spawn,
    state_of,
    write_config,
)

pytestmark = pytest.mark.slow

READY = "Ctrl-D leaves"
ENTER = "\r"


@contextmanager
def _kun_serve(tmp_path: Path, config: Path) -> Iterator[str]:
    """A real ``kun serve`` over ``tmp_path/home``; its URL."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "kun", "serve", "--port", str(port), "--config", str(config),
        "--home", str(tmp_path / "home"),
    ]  # fmt: skip
    with (tmp_path / "serve.out").open("wb") as out:
        process = subprocess.Popen(
            command, env=environ(), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                httpx.get(f"{url}/v1/threads", timeout=5)
                break
            except httpx.TransportError:
                assert process.poll() is None, (tmp_path / "serve.out").read_text()
                assert time.monotonic() < deadline, "kun serve did not start"
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(TIMEOUT)


def _session(workspace: Path, *args: str) -> pexpect.spawn:
    child = spawn(list(args), cwd=workspace)
    child.expect(READY)
    return child


def test_a_session_over_the_server_talks_approves_interrupts_and_comes_back(
    tmp_path: Path,
) -> None:
    write = FakeResponse(chunks=tuple(tool_reply("write_file", {"path": "b.py", "content": "x"})))
    script = [
        answer("first answer"),
        write,
        answer("wrote it"),
        slow_answer(sep="\n"),
        answer("after coming back"),
    ]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    with (
        serve(script) as provider,
        _kun_serve(tmp_path, write_config(tmp_path, provider.base_url)) as url,
    ):
        child = _session(workspace, "--server", url, "--approval", "untrusted")
        child.send("hello" + ENTER)
        child.expect("first answer")
        child.expect("turn completed")
        child.send("/model other-model" + ENTER)
        child.expect("model fake/other-model")
        child.send("write b.py" + ENTER)
        child.expect("allow")
        child.send("y" + ENTER)
        child.expect("wrote it")
        child.expect("turn completed")
        child.send("talk" + ENTER)
        child.expect("word3")
        child.send("\x1b")
        child.expect("turn aborted")
        child.send("\x04")
        code, text = finish(child)
        assert code == 0 and "Traceback" not in text, text
        thread = only_thread(home)
        assert f"kun --server {url} resume {thread[:12]}" in text
        assert (workspace / "b.py").read_text() == "x"

        child = _session(workspace, "--server", url, "-c")
        child.send("again" + ENTER)
        child.expect("after coming back")
        child.expect("turn completed")
        child.send("\x04")
        code, text = finish(child)
        assert code == 0 and f"resumed {thread}" in text, text

        child = _session(workspace, "--server", url, "resume", thread[:10])
        child.send("/quit" + ENTER)
        code, text = finish(child)
        assert code == 0 and f"resumed {thread}" in text and "4 turns" in text, text
    state = state_of(home, thread)
    assert [t.status for t in state.turns] == ["completed", "completed", "aborted", "completed"]
    said = [i.text for t in state.turns for i in t.items if isinstance(i, UserMessage)]
    assert said == ["hello", "write b.py", "talk", "again"]
    assert state.settings.approval_policy == "untrusted"
    models = [r.json["model"] for r in provider.requests if r.method == "POST"]
    assert models == ["fake-model"] + ["other-model"] * 4


def test_without_a_thread_of_this_workspace_continue_is_one_line(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with (
        serve([]) as provider,
        _kun_serve(tmp_path, write_config(tmp_path, provider.base_url)) as url,
    ):
        child = spawn(["--server", url, "-c"], cwd=workspace)
        code, text = finish(child)
    assert code == 1 and "Traceback" not in text
    assert f"kun: error: no thread to continue in {workspace.resolve()}" in text


def test_a_question_over_the_server_is_asked_here_and_answered_there(tmp_path: Path) -> None:
    ask = FakeResponse(
        chunks=tuple(tool_reply("request_user_input", {"question": "which colour?"}))
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with (
        serve([ask, answer("blue it is")]) as provider,
        _kun_serve(tmp_path, write_config(tmp_path, provider.base_url)) as url,
    ):
        child = _session(workspace, "--server", url)
        child.send("paint it" + ENTER)
        child.expect("which colour")
        child.expect("answer:")
        child.send("blue" + ENTER)
        child.expect("blue it is")
        child.expect("turn completed")
        child.send("\x04")
        code, text = finish(child)
    assert code == 0, text
    turn = state_of(tmp_path / "home", only_thread(tmp_path / "home")).turns[0]
    assert turn.status == "completed"
    assert "blue" in msgspec.json.encode(provider.requests[-1].json).decode()


def test_the_local_session_on_a_thread_serve_runs_joins_its_turn(tmp_path: Path) -> None:
    """``kun -c`` while ``kun serve`` runs a turn of this workspace's
    thread: the session shows that turn (it is the thread's open turn,
    whoever runs it) and leaves without a traceback."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    stalled = FakeResponse(chunks=answer("slow").chunks, stalls=((0, 60.0),))
    with serve([stalled]) as provider:
        config = write_config(tmp_path, provider.base_url)
        with _kun_serve(tmp_path, config) as url:
            with httpx.Client(base_url=url) as client:
                created = client.post("/v1/threads", json={"workspace": str(workspace)})
                thread = created.json()["thread_id"]
                turn = client.post(f"/v1/threads/{thread}/turns", json={"text": "hang"})
                assert turn.status_code == 202
                child = spawn(
                    ["-c", "--config", str(config), "--home", str(tmp_path / "home")],
                    cwd=workspace,
                )
                child.expect("still running .elsewhere.: joining it")
                child.send("\x04")
                _, text = finish(child)
                client.post(
                    f"/v1/threads/{thread}/turns/{turn.json()['turn_id']}/interrupt", json={}
                )
    assert "Traceback" not in text, text
    assert f"resumed {thread}" in text


def test_resume_over_a_server_without_a_terminal_is_one_line(tmp_path: Path) -> None:
    code, _, err = kun("--server", "http://127.0.0.1:9", "resume", "thr_x", cwd=tmp_path)
    assert code == 1 and err.count("\n") == 1
    assert "needs a terminal; for one turn without one: kun --server http://127.0.0.1:9 run" in err
    code, _, err = kun("--server", "http://127.0.0.1:9", "--config", "k.toml", cwd=tmp_path)
    assert code == 1 and "--config does not go with --server" in err


def test_an_idle_local_session_and_kun_serve_take_turns_on_one_thread(tmp_path: Path) -> None:
    """The terminal's session continues a thread kun serve serves: while
    it sits idle (just opened, then after its own turn) the server runs
    turns on that thread: neither holds the thread between its turns."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [answer("serve 1"), answer("serve 2"), answer("terminal 3"), answer("serve 4")]
    with serve(script) as provider:
        config = write_config(tmp_path, provider.base_url)
        with _kun_serve(tmp_path, config) as url, httpx.Client(base_url=url) as client:
            thread = client.post("/v1/threads", json={"workspace": str(workspace)}).json()
            thread_id = thread["thread_id"]
            _settled(client, thread_id, "one")
            home = str(tmp_path / "home")
            child = _session(workspace, "-c", "--config", str(config), "--home", home)
            assert _settled(client, thread_id, "two")["status"] == "completed"
            child.send("three" + ENTER)
            child.expect("terminal 3")
            child.expect("turn completed")
            assert _settled(client, thread_id, "four")["status"] == "completed"
            child.send("\x04")
            code, text = finish(child)
    assert code == 0 and "Traceback" not in text, text
    said = [
        i.text
        for t in state_of(tmp_path / "home", thread_id).turns
        for i in t.items
        if isinstance(i, UserMessage)
    ]
    assert said == ["one", "two", "three", "four"]


def _settled(client: httpx.Client, thread_id: str, text: str) -> dict[str, object]:
    started = client.post(f"/v1/threads/{thread_id}/turns", json={"text": text})
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + TIMEOUT
    while True:
        turn: dict[str, object] = client.get(
            f"/v1/threads/{thread_id}/turns/{started.json()['turn_id']}"
        ).json()
        if turn["status"] not in ("queued", "running"):
            return turn
        assert time.monotonic() < deadline, turn
        time.sleep(0.02)


def test_a_turn_running_on_the_server_is_joined_and_interrupted(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with serve([slow_answer(sep="\n")]) as provider:
        config = write_config(tmp_path, provider.base_url)
        with _kun_serve(tmp_path, config) as url, httpx.Client(base_url=url) as client:
            thread_id = client.post("/v1/threads", json={"workspace": str(workspace)}).json()[
                "thread_id"
            ]
            started = client.post(f"/v1/threads/{thread_id}/turns", json={"text": "talk"})
            assert started.status_code == 202
            child = _session(workspace, "--server", url, "resume", thread_id)
            child.expect("still running .elsewhere.: joining it")
            child.expect("word3")
            child.send("\x1b")
            child.expect("turn aborted")
            child.send("\x04")
            code, text = finish(child)
    assert code == 0 and "Traceback" not in text, text
    assert [t.status for t in state_of(tmp_path / "home", thread_id).turns] == ["aborted"]


def test_a_turn_another_client_starts_is_shown_in_an_idle_session(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [answer("mine"), answer("from the other client"), answer("mine again")]
    with serve(script) as provider:
        config = write_config(tmp_path, provider.base_url)
        with _kun_serve(tmp_path, config) as url, httpx.Client(base_url=url) as client:
            child = _session(workspace, "--server", url)
            child.send("first" + ENTER)
            child.expect("mine")
            child.expect("turn completed")
            thread_id = only_thread(tmp_path / "home")
            assert _settled(client, thread_id, "from elsewhere")["status"] == "completed"
            child.expect("a turn started .the goal resumed, or another client.")
            child.expect("from the other client")
            child.expect("turn completed")
            child.send("third" + ENTER)
            child.expect("mine again")
            child.expect("turn completed")
            child.send("\x04")
            code, text = finish(child)
    assert code == 0 and "Traceback" not in text, text
    turns = state_of(tmp_path / "home", thread_id).turns
    assert [t.status for t in turns] == ["completed"] * 3


def test_every_slash_command_works_over_the_server(tmp_path: Path) -> None:
    """The session over ``--server`` is the session: "always" is offered
    and recorded on the server's thread, and /rewind, /undo-rewind, /fork,
    /compact, /goal, /plan, /usage, /threads, /title, /model, /approval,
    /new and /help do what they do here."""
    write = FakeResponse(chunks=tuple(tool_reply("write_file", {"path": "b.py", "content": "x"})))
    script = [write, answer("wrote it"), answer("a summary of it all"), answer("planned")]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    with (
        serve(script) as provider,
        _kun_serve(tmp_path, write_config(tmp_path, provider.base_url)) as url,
    ):
        child = _session(workspace, "--server", url, "--approval", "untrusted")
        child.send("/usage" + ENTER)
        child.expect("no thread yet")
        child.send("write b.py" + ENTER)
        child.expect("a always for this thread: write_file")
        child.expect(r"allow\? \[y/a/N\]")
        child.send("a" + ENTER)
        child.expect("always allowed on this thread: write_file")
        child.expect("wrote it")
        child.expect("turn completed")
        thread = only_thread(home)
        for command, shown in [
            ("/help", "/undo-rewind"),
            ("/title Fix the bug", "title: Fix the bug"),
            ("/approval never", "approval never"),
            ("/model other-model", "model fake/other-model"),
            ("/usage", f"thread {thread}: "),
            ("/threads", "Fix the bug"),
            ("/goal ship it", "goal set; your next message starts work on it"),
            ("/goal pause", "goal paused"),
            ("/goal budget 5000", "token budget 5,000"),
            ("/goal clear", "goal cleared"),
            ("/plan", "no plan in this thread yet"),
            ("/rewind 5", "there is no turn 5"),
            ("/rewind 1", "hid turn 1 (nothing"),
            ("/undo-rewind", "brought back 1"),
            ("/compact", "compacted"),
            ("/fork 1", "keeping turns 1..1"),
        ]:
            child.send(command + ENTER)
            child.expect_exact(shown)
        child.send("/plan on" + ENTER)
        child.expect_exact("plan mode on")
        child.send("/new" + ENTER)
        child.expect("new thread")
        child.send("/quit" + ENTER)
        code, text = finish(child)
        assert code == 0 and "Traceback" not in text, text
        assert (workspace / "b.py").read_text() == "x"
    state = state_of(home, thread)
    assert [r.tool for r in state.settings.allow_rules] == ["write_file"]
    assert state.settings.title == "Fix the bug" and state.settings.approval_policy == "never"
    assert state.settings.model == "other-model" and state.settings.goal is None
    kinds = {type(e).__name__ for e in events_of(home, thread)}
    assert {"ThreadRewound", "ThreadRewindUndone"} <= kinds
    forks = [p.name for p in (home / "threads").iterdir() if p.name != thread]
    assert len(forks) == 1 and state_of(home, forks[0]).forked_from is not None
