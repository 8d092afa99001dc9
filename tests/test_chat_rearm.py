"""``kun resume`` on a thread whose turn a stopped kun left waiting for an
approval, in a real pseudo-terminal: the approval is asked again, ``y``
runs the call once, and the turn goes on to its end."""

from __future__ import annotations

from pathlib import Path

from kun.store import encode_line, log_path
from kun.testing.logbuilder import LogBuilder
from tests.terminal_support import answer, finish, serve, spawn, state_of, write_config

ENTER = "\r"
THREAD = "t_waiting_chat"


def test_resume_asks_the_waiting_approval_again(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    b = LogBuilder(THREAD)
    b.create(workspace=str(workspace))
    b.start_turn("deploy")
    call = b.tool_call("bash", {"command": "echo deployed >> deployed.txt"}, call_id="call_b")
    b.request_approval(call, "bash echo deployed >> deployed.txt")
    path = log_path(home, THREAD)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(encode_line(e) for e in b.events))
    with serve([answer("Deployed.")]) as provider:
        config = write_config(tmp_path, provider.base_url)
        child = spawn(
            ["resume", THREAD, "--config", str(config), "--home", str(home)], cwd=workspace
        )
        child.expect_exact("still waiting for your answer")
        child.expect_exact("approval needed")
        child.send("y" + ENTER)
        child.expect("turn completed")
        child.send("/quit" + ENTER)
        code, text = finish(child)
    assert code == 0, text
    assert (workspace / "deployed.txt").read_text() == "deployed\n"
    (turn,) = state_of(home, THREAD).turns
    assert turn.status == "completed"


def test_sigterm_at_an_approval_leaves_it_for_the_next_resume(tmp_path: Path) -> None:
    """The session killed while it asks an approval leaves the turn waiting
    (it is not interrupted); ``kun resume`` asks again and ``y`` runs it."""
    import signal

    import pexpect

    from kun.model.scripted import tool_reply
    from kun.testing.fake_provider import FakeResponse
    from tests.terminal_support import only_thread

    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    call = tool_reply("bash", {"command": "echo deployed >> deployed.txt"})
    with serve([FakeResponse(chunks=tuple(call)), answer("Deployed.")]) as provider:
        config = write_config(tmp_path, provider.base_url)
        child = spawn(["--config", str(config), "--home", str(home)], cwd=workspace)
        child.expect("Ctrl-D leaves")
        child.send("deploy" + ENTER)
        child.expect_exact("approval needed")
        child.kill(signal.SIGTERM)
        child.expect(pexpect.EOF)
        child.close()
        thread = only_thread(home)
        assert state_of(home, thread).turns[0].status == "running"
        assert not (workspace / "deployed.txt").exists()
        child = spawn(
            ["resume", thread, "--config", str(config), "--home", str(home)], cwd=workspace
        )
        child.expect_exact("approval needed")
        child.send("y" + ENTER)
        child.expect("turn completed")
        child.send("/quit" + ENTER)
        code, text = finish(child)
    assert code == 0, text
    assert (workspace / "deployed.txt").read_text() == "deployed\n"
    assert state_of(home, thread).turns[0].status == "completed"
