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
        assert f"kun --server {url} resume {thread}" in text
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
    assert "kun: error: the server has no thread of this workspace" in text


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


def test_the_local_session_on_a_thread_serve_runs_says_who_and_how(tmp_path: Path) -> None:
    """``kun -c`` while ``kun serve`` runs a turn of this workspace's
    thread: one line naming kun serve and the way through it."""
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
                code, text = finish(child)
                client.post(
                    f"/v1/threads/{thread}/turns/{turn.json()['turn_id']}/interrupt", json={}
                )
    assert code == 1 and "Traceback" not in text, text
    assert "kun: error: " in text and "is being written by kun serve (process" in text
    assert f"kun --server {url} resume {thread}" in text


def test_resume_over_the_server_names_its_thread(tmp_path: Path) -> None:
    code, _, err = kun("--server", "http://127.0.0.1:9", "resume", cwd=tmp_path)
    assert code == 1 and err.count("\n") == 1
    assert "with --server, name the thread: kun --server http://127.0.0.1:9 resume THREAD" in err
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
            child.expect("still open on the server: joining it")
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
            child.expect("a turn started on the server")
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


def test_over_the_server_always_is_not_offered_and_other_commands_are_named(
    tmp_path: Path,
) -> None:
    """The API sets no allow rules: the prompt offers [y/N], and "a" asks
    again instead of approving once. A session command the server does not
    offer names the command that does it; /help lists /help."""
    write = FakeResponse(chunks=tuple(tool_reply("write_file", {"path": "b.py", "content": "x"})))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    with (
        serve([write, answer("wrote it")]) as provider,
        _kun_serve(tmp_path, write_config(tmp_path, provider.base_url)) as url,
    ):
        child = _session(workspace, "--server", url, "--approval", "untrusted")
        child.send("write b.py" + ENTER)
        child.expect("no always: the server's API sets no allow rules")
        child.expect(r"allow\? (\[[^\]]*\])")
        assert child.match.group(1) == "[y/N]"
        child.send("a" + ENTER)
        child.expect(r"no always here \(the server's API sets no allow rules\)")
        child.expect(r"allow\? \[y/N\]")
        assert not (workspace / "b.py").exists()
        child.send("y" + ENTER)
        child.expect("wrote it")
        child.expect("turn completed")
        thread = only_thread(home)
        child.send("/rewind 1" + ENTER)
        child.expect(f"instead: kun --server {url} rewind {thread} 1 ")
        child.send("/undo-rewind" + ENTER)
        child.expect(f"instead: kun --server {url} rewind {thread} --undo ")
        child.send("/goal ship it" + ENTER)
        child.expect(f"kun resume {thread} opens this thread there")
        child.send("/help" + ENTER)
        child.expect("/help  these commands")
        child.send("/quit" + ENTER)
        code, text = finish(child)
        assert code == 0 and "Traceback" not in text, text
        assert (workspace / "b.py").read_text() == "x"

        child = _session(workspace, "--server", url, "resume", thread)
        child.send("/quit" + ENTER)
        code, text = finish(child)
        assert code == 0 and f"resumed {thread} · " in text and " · 1 turn" in text, text
        assert "1 turns" not in text
