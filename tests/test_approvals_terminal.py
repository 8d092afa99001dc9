"""Approvals at a real terminal against the loopback provider: the diff
shown before approving, "always for this thread", no with a reason the model
reads, ``--approval full-auto`` unattended, and what ``kun replay`` shows."""

from __future__ import annotations

from pathlib import Path

import msgspec

from kun.contracts import events as ev
from kun.contracts.threads import AllowRule
from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeProvider, FakeResponse
from tests.terminal_support import (
    answer,
    assert_settled,
    events_of,
    finish,
    kun,
    only_thread,
    serve,
    spawn,
    write_config,
)

ENTER = "\r"


def _call(name: str, call_id: str, **arguments: object) -> FakeResponse:
    return FakeResponse(chunks=tuple(tool_reply(name, arguments, call_id=call_id)))


def _setup(tmp_path: Path, base_url: str) -> tuple[list[str], Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    home = tmp_path / "home"
    args = ["--config", str(write_config(tmp_path, base_url)), "--home", str(home)]
    return [*args, "--workspace", str(workspace)], home, workspace


def _sent(provider: FakeProvider) -> list[str]:
    """Each model request's body as JSON text."""
    return [msgspec.json.encode(r.json).decode() for r in provider.requests if r.method == "POST"]


def test_a_write_shows_its_diff_before_approval_and_in_replay(tmp_path: Path) -> None:
    write = _call("write_file", "c1", path="b.py", content="print('new')\nkept = 1\n")
    with serve([write, answer("wrote it")]) as provider:
        args, home, workspace = _setup(tmp_path, provider.base_url)
        (workspace / "b.py").write_text("print('old')\nkept = 1\n")
        child = spawn(["run", "write b.py", "--approval", "untrusted", *args], cwd=tmp_path)
        child.expect(r"allow\? ")
        before = child.before
        child.sendline("y")
        code, text = finish(child)
    assert code == 0, text
    assert "approval needed: write_file b.py" in before
    for row in ("--- a/b.py", "+++ b/b.py", "-print('old')", "+print('new')", " kept = 1"):
        assert row in before, before
    assert text.count("+print('new')") == 1, "the approved diff is not drawn again"
    assert "+++ b/b.py" not in _sent(provider)[1], "the model reads no diff"
    code, out, _ = kun("replay", only_thread(home), "--home", str(home))
    assert code == 0
    assert "-print('old')" in out and "+print('new')" in out


def test_a_write_that_ran_without_asking_shows_the_diff_it_made(tmp_path: Path) -> None:
    write = _call("write_file", "c1", path="new.txt", content="hello\n")
    with serve([write, answer("done")]) as provider:
        args, _, _ = _setup(tmp_path, provider.base_url)
        code, out, err = kun("run", "write", "--approval", "on-request", *args)
    assert code == 0, err
    assert "--- /dev/null\n   +++ b/new.txt\n   @@ -0,0 +1 @@\n   +hello" in out, out


def test_always_then_the_same_prefix_runs_and_other_commands_still_ask(tmp_path: Path) -> None:
    script = [
        _call("bash", "c1", command="echo one"),
        _call("bash", "c2", command="echo two"),
        _call("bash", "c3", command="echo three; touch chained"),
        _call("bash", "c4", command="true"),
        _call("bash", "c5", command="env true"),
        answer("all done"),
    ]
    with serve(script) as provider:
        config = write_config(tmp_path, provider.base_url)
        workspace = tmp_path / "ws"
        workspace.mkdir()
        home = tmp_path / "home"
        child = spawn(["--config", str(config), "--home", str(home)], cwd=workspace)
        child.expect("Ctrl-D leaves")
        child.send("run things" + ENTER)
        child.expect("a always for this thread: bash `echo …`")
        child.expect(r"allow\? ")
        child.send("a" + ENTER)
        child.expect("approval needed: bash: echo three; touch chained")
        child.expect("no always: not a simple command")
        child.expect(r"allow\? \[y/N\]")  # no "a" offered where there is no always
        child.send("please do not chain commands" + ENTER)
        child.expect("approval needed: bash: true")
        child.expect(r"allow\? ")
        child.send("y" + ENTER)
        child.expect("approval needed: bash: env true")
        child.expect(r"allow\? ")
        child.send("a" + ENTER)  # not taken as a yes: asked again
        child.expect(r"no always here \(not a simple command\): y allows once, n denies")
        child.expect(r"allow\? \[y/N\]")
        child.send("y" + ENTER)
        child.expect("all done")
        child.expect("turn completed")
        child.send("\x04")
        code, text = finish(child)
    assert code == 0, text
    assert text.count("approval needed") == 4, text
    assert not (workspace / "chained").exists()
    thread = only_thread(home)
    state = assert_settled(home, thread)
    assert state.settings.allow_rules == (AllowRule(tool="bash", prefix=("echo",)),)
    updates = [e for e in events_of(home, thread) if isinstance(e, ev.ThreadUpdated)]
    assert [u.always_allow for u in updates if u.always_allow] == [state.settings.allow_rules]
    fourth = _sent(provider)[3]
    assert "The user denied bash. Their reason: please do not chain commands." in fourth
    code, out, _ = kun("replay", thread, "--home", str(home))
    assert code == 0
    assert "always allowed: bash `echo …`" in out
    assert "approved (always for this thread: bash `echo …`)" in out
    assert "denied (please do not chain commands)" in out


def test_full_auto_runs_a_command_unattended(tmp_path: Path) -> None:
    script = [_call("bash", "c1", command="echo made > made.txt"), answer("made it")]
    with serve(script) as provider:
        args, home, workspace = _setup(tmp_path, provider.base_url)
        code, out, err = kun("run", "make a file", "--approval", "full-auto", *args)
    assert code == 0, err
    assert (workspace / "made.txt").read_text() == "made\n"
    assert "approval needed" not in out and "made it" in out
    assert not any(isinstance(e, ev.ApprovalRequested) for e in events_of(home, only_thread(home)))
