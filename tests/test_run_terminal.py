"""``kun run`` at a terminal and in pipes: the model a turn runs on, prompts
that cancel at once, signals that settle the turn, one line per error."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path

import msgspec
import pexpect
import pytest

from kun.contracts import events as ev
from kun.contracts.items import Approval
from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeResponse
from tests.terminal_support import (
    answer,
    assert_settled,
    events_of,
    finish,
    kun,
    only_thread,
    plain,
    serve,
    slow_answer,
    spawn,
    state_of,
    write_config,
)

WRITE = FakeResponse(chunks=tuple(tool_reply("write_file", {"path": "b.py", "content": "x"})))


def _setup(tmp_path: Path, base_url: str) -> tuple[list[str], Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    home = tmp_path / "home"
    args = ["--config", str(write_config(tmp_path, base_url)), "--home", str(home)]
    return [*args, "--workspace", str(workspace)], home, workspace


def _models(provider: object) -> list[str]:
    return [r.json["model"] for r in provider.requests if r.method == "POST"]  # type: ignore[attr-defined]


def test_model_alone_picks_that_model_of_the_default_provider(tmp_path: Path) -> None:
    with serve([answer("hi")]) as provider:
        args, home, _ = _setup(tmp_path, provider.base_url)
        code, _, err = kun("run", "hi", "--model", "other-model", *args)
    assert code == 0, err
    assert _models(provider) == ["other-model"]
    settings = events_of(home, only_thread(home))[0]
    assert isinstance(settings, ev.ThreadCreated)
    assert (settings.settings.provider, settings.settings.model) == ("fake", "other-model")


def test_a_thread_keeps_its_model_unless_the_user_names_another(tmp_path: Path) -> None:
    with serve([answer("one"), answer("two"), answer("three")]) as provider:
        args, home, _ = _setup(tmp_path, provider.base_url)
        code, _, err = kun("run", "first", "--model", "m2", *args)
        assert code == 0, err
        thread = only_thread(home)
        code, _, err = kun("run", "second", "--thread", thread[:8], *args)
        assert code == 0, err
        code, _, err = kun("run", "third", "--thread", thread, "--model", "m3", *args)
        assert code == 0, err
    assert _models(provider) == ["m2", "m2", "m3"]
    updates = [e for e in events_of(home, thread) if isinstance(e, ev.ThreadUpdated)]
    assert [(u.provider, u.model) for u in updates if u.title is msgspec.UNSET] == [("fake", "m3")]
    code, out, _ = kun("replay", thread, "--home", str(home))
    turns = [line for line in out.splitlines() if line.startswith("== turn")]
    assert [line.split(" · ")[-2] for line in turns] == ["m2", "m2", "m3"]


def test_a_usage_error_is_one_line_and_exit_1(tmp_path: Path) -> None:
    code, out, err = kun("run", "--home", str(tmp_path))
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("kun: error: ")
    assert "PROMPT" in err
    code, _, err = kun("replay", "--no-such-flag", "t")
    assert code == 1 and err.count("\n") == 1 and "--no-such-flag" in err


def test_a_provider_error_prints_once(tmp_path: Path) -> None:
    with serve([FakeResponse(status=400)]) as provider:
        args, _, _ = _setup(tmp_path, provider.base_url)
        code, out, err = kun("run", "hi", *args)
    assert code == 1
    assert (out + err).count("fake provider: HTTP 400") == 1, out + err


def test_a_retry_is_one_quiet_line_and_no_failure(tmp_path: Path) -> None:
    with serve([FakeResponse(status=429, retry_after="1"), answer("done")]) as provider:
        args, _, _ = _setup(tmp_path, provider.base_url)
        code, out, err = kun("run", "hi", *args)
    assert code == 0, err
    both = out + err
    assert both.count("retrying in 1 s, attempt 2/5") == 1, both
    assert "failed" not in both and "429" not in both


def test_the_spinner_line_is_cleared_before_anything_else_prints(tmp_path: Path) -> None:
    script = [FakeResponse(status=429, retry_after="1"), answer("done")]
    with serve(script) as provider:
        args, _, _ = _setup(tmp_path, provider.base_url)
        child = spawn(["run", "hi", *args], cwd=tmp_path)
        code, text = finish(child)
    assert code == 0, text
    assert not re.search(r"waiting for the model[^\r\n]*\S", text), text
    assert "waiting for the model" in text and "retrying in 1 s" in text


@pytest.mark.parametrize(
    ("key", "decision"), [("\x03", "cancelled"), ("\x1b", "cancelled"), ("\x04", "denied")]
)
def test_ctrl_c_esc_and_ctrl_d_at_an_approval_cancel_at_once(
    tmp_path: Path, key: str, decision: str
) -> None:
    with serve([WRITE, answer("never sent")]) as provider:
        args, home, workspace = _setup(tmp_path, provider.base_url)
        child = spawn(["run", "write b.py", "--approval", "untrusted", *args], cwd=tmp_path)
        child.expect("allow")
        child.send(key)
        child.expect("interrupt")
        code, text = finish(child)
    assert code == 1, text
    assert "Traceback" not in text
    assert not (workspace / "b.py").exists()
    thread = only_thread(home)
    state = assert_settled(home, thread)
    assert state.turns[0].status == "aborted"
    (approval,) = [i for i in state.turns[0].items if isinstance(i, Approval)]
    assert approval.status == decision


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_settle_the_turn_as_aborted(tmp_path: Path, signum: int) -> None:
    with serve([slow_answer()]) as provider:
        args, home, _ = _setup(tmp_path, provider.base_url)
        child = spawn(["run", "talk", *args], cwd=tmp_path)
        child.expect("word3")
        child.kill(signum)
        child.expect(pexpect.EOF)
        child.close()
    thread = only_thread(home)
    events = events_of(home, thread)
    assert isinstance(events[-1], ev.TurnAborted), events[-1]
    assert assert_settled(home, thread).turns[0].status == "aborted"


def test_prompts_read_the_terminal_when_stdout_is_piped(tmp_path: Path) -> None:
    with serve([WRITE, answer("wrote it")]) as provider:
        args, _, workspace = _setup(tmp_path, provider.base_url)
        line = [
            sys.executable,
            "-m",
            "kun",
            "run",
            "'write b.py'",
            "--approval",
            "untrusted",
            *args,
        ]
        child = spawn([*line, "|", "cat"], cwd=tmp_path, shell=True)
        child.expect("allow")
        child.sendline("y")
        code, text = finish(child)
    assert code == 0, text
    assert (workspace / "b.py").read_text() == "x"
    assert "wrote it" in text


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_at_an_approval_leaves_the_turn_waiting(tmp_path: Path, signum: int) -> None:
    """SIGTERM or SIGHUP while ``kun run`` asks an approval stops kun but
    not the turn: it waits (durable suspension) and nothing ran; Ctrl-C
    still interrupts (the test above)."""
    with serve([WRITE, answer("never sent")]) as provider:
        args, home, workspace = _setup(tmp_path, provider.base_url)
        child = spawn(["run", "write b.py", "--approval", "untrusted", *args], cwd=tmp_path)
        child.expect("allow")
        child.kill(signum)
        child.expect(pexpect.EOF)
        child.close()
    assert not (workspace / "b.py").exists()
    thread = only_thread(home)
    state = state_of(home, thread)
    assert state.turns[0].status == "running"
    assert len(state.pending_approvals) == 1
    if signum == signal.SIGTERM:
        assert "kun resume" in plain(child.before or "")
