"""The interactive session, driven in a real pseudo-terminal against the
loopback provider: conversation, slash commands, steering, keys, signals."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import pexpect
import pytest

from kun.contracts import events as ev
from kun.contracts.items import UserMessage
from kun.contracts.model import TextDeltaChunk
from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeProvider, FakeResponse
from kun.testing.logbuilder import LogBuilder
from tests.terminal_support import (
    answer,
    assert_settled,
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

READY = "Ctrl-D leaves"
ENTER = "\r"


def _session(tmp_path: Path, provider: FakeProvider, *args: str) -> pexpect.spawn:
    config = write_config(tmp_path, provider.base_url)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.py").write_text("print('a')\n")
    child = spawn([*args, "--config", str(config), "--home", str(tmp_path / "home")], cwd=workspace)
    child.expect(READY)
    return child


def _requests(provider: FakeProvider) -> list[dict[str, object]]:
    return [r.json for r in provider.requests if r.method == "POST"]


def _user_texts(home: Path, thread: str) -> list[str]:
    state = state_of(home, thread)
    return [i.text for t in state.turns for i in t.items if isinstance(i, UserMessage)]


def test_a_conversation_of_several_turns_with_a_model_switch(tmp_path: Path) -> None:
    with serve([answer("first answer"), answer("second answer")]) as provider:
        child = _session(tmp_path, provider)
        child.send("line one\\" + ENTER + "line two" + ENTER)
        child.expect("first answer")
        child.expect("turn completed")
        child.send("\x03")
        child.expect("Ctrl-D or /quit leaves")
        child.send("/model other-model" + ENTER)
        child.expect("fake/other-model")
        child.send("again\x1b" + ENTER + "and more" + ENTER)
        child.expect("second answer")
        child.expect("turn completed")
        child.send("\x04")
        code, text = finish(child)
    assert code == 0, text
    home = tmp_path / "home"
    thread = only_thread(home)
    assert f"back to it: kun -c --home {home}, or kun resume {thread[:12]} --home {home}" in text
    assert [r["model"] for r in _requests(provider)] == ["fake-model", "other-model"]
    assert _user_texts(home, thread) == ["line one\nline two", "again\nand more"]
    second = msgspec.json.encode(_requests(provider)[1]).decode()
    assert "line one" in second and "first answer" in second
    updates = [e for e in events_of(home, thread) if isinstance(e, ev.ThreadUpdated)]
    assert [u.model for u in updates if u.title is msgspec.UNSET] == ["other-model"]
    assert [t.model for t in state_of(home, thread).turns] == ["fake-model", "other-model"]
    assert "line one" in (home / "history").read_text()


def test_typing_while_a_turn_streams_steers_it(tmp_path: Path) -> None:
    words = tuple(TextDeltaChunk(text=f"word{i}\n") for i in range(150))
    first = FakeResponse(
        chunks=(*words, *tool_reply("read_file", {"path": "a.py"})), per_event=True,
        piece_delay=0.01,
    )  # fmt: skip
    with serve([first, answer("steered answer")]) as provider:
        child = _session(tmp_path, provider)
        child.send("read a.py" + ENTER)
        child.expect("word3")
        child.send("also say hello" + ENTER)
        child.expect("steering")
        child.expect("steered answer")
        child.expect("turn completed")
        child.send("/quit" + ENTER)
        code, text = finish(child)
    assert code == 0, text
    home = tmp_path / "home"
    thread = only_thread(home)
    turn = state_of(home, thread).turns[0]
    steered = [i for i in turn.items if isinstance(i, UserMessage) and i.steered]
    assert [i.text for i in steered] == ["also say hello"]
    assert "also say hello" in msgspec.json.encode(_requests(provider)[1]).decode()


def test_steering_that_comes_during_the_last_step_gets_an_answer_in_the_turn(
    tmp_path: Path,
) -> None:
    with serve([slow_answer(words=150, sep="\n"), answer("late reply")]) as provider:
        child = _session(tmp_path, provider)
        child.send("talk" + ENTER)
        child.expect("word3")
        child.send("one more thing" + ENTER)
        child.expect("the model reads this at its next step")
        child.expect("late reply")
        child.expect("turn completed")
        child.send("\x04")
        code, text = finish(child)
    assert code == 0, text
    home = tmp_path / "home"
    thread = only_thread(home)
    assert _user_texts(home, thread) == ["talk", "one more thing"]
    assert [t.status for t in state_of(home, thread).turns] == ["completed"]


@pytest.mark.parametrize("key", ["\x1b", "\x03"])
def test_esc_and_ctrl_c_interrupt_a_streaming_turn_and_the_session_goes_on(
    tmp_path: Path, key: str
) -> None:
    with serve([slow_answer(sep="\n"), answer("after")]) as provider:
        child = _session(tmp_path, provider)
        child.send("talk" + ENTER)
        child.expect("word3")
        child.send(key)
        child.expect("turn aborted")
        child.send("next" + ENTER)
        child.expect("after")
        child.expect("turn completed")
        child.send("\x04")
        code, text = finish(child)
    assert code == 0 and "Traceback" not in text
    home = tmp_path / "home"
    state = assert_settled(home, only_thread(home))
    assert [t.status for t in state.turns] == ["aborted", "completed"]


def test_ctrl_d_at_an_approval_denies_and_interrupts(tmp_path: Path) -> None:
    write = FakeResponse(chunks=tuple(tool_reply("write_file", {"path": "b.py", "content": "x"})))
    with serve([write, answer("never")]) as provider:
        child = _session(tmp_path, provider, "--approval", "untrusted")
        child.send("write b.py" + ENTER)
        child.expect("allow")
        child.send("\x04")
        child.expect("turn aborted")
        child.send("\x04")
        code, text = finish(child)
    assert code == 0 and "Traceback" not in text
    home = tmp_path / "home"
    state = assert_settled(home, only_thread(home))
    assert state.turns[0].status == "aborted"
    assert not (tmp_path / "ws" / "b.py").exists()
    decisions = [e.decision for e in events_of(home, state.thread_id)
                 if isinstance(e, ev.ApprovalResolved)]  # fmt: skip
    assert decisions == ["denied"]


def test_an_approval_answered_yes_runs_the_tool(tmp_path: Path) -> None:
    write = FakeResponse(chunks=tuple(tool_reply("write_file", {"path": "b.py", "content": "x"})))
    with serve([write, answer("wrote it")]) as provider:
        child = _session(tmp_path, provider, "--approval", "untrusted")
        child.send("write b.py" + ENTER)
        child.expect("allow")
        child.send("y" + ENTER)
        child.expect("wrote it")
        child.expect("turn completed")
        child.send("\x04")
        code, _ = finish(child)
    assert code == 0
    assert (tmp_path / "ws" / "b.py").read_text() == "x"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_mid_turn_record_the_abort(tmp_path: Path, signum: int) -> None:
    with serve([slow_answer(sep="\n")]) as provider:
        child = _session(tmp_path, provider)
        child.send("talk" + ENTER)
        child.expect("word3")
        child.kill(signum)
        child.expect(pexpect.EOF)
        child.close()
    home = tmp_path / "home"
    thread = only_thread(home)
    assert isinstance(events_of(home, thread)[-1], ev.TurnAborted)
    assert assert_settled(home, thread).turns[0].status == "aborted"


def test_rewind_n_hides_turn_n_and_later_as_kun_rewind_does(tmp_path: Path) -> None:
    """``/rewind 1`` is ``kun rewind T 1``: turn 1 and every later turn."""
    with serve([answer("one"), answer("two")]) as provider:
        child = _session(tmp_path, provider)
        for message in ("first", "second"):
            child.send(message + ENTER)
            child.expect("turn completed")
        child.send("/rewind 1" + ENTER)
        child.expect_exact("hid turn 1 and the 1 later turn (nothing is deleted")
        child.send("/rewind 1" + ENTER)
        child.expect_exact("turn 1 of thread")
        child.expect_exact("is already hidden")
        child.send("/quit" + ENTER)
        code, text = finish(child)
    assert code == 0, text
    home = tmp_path / "home"
    state = state_of(home, only_thread(home))
    assert [t.hidden_by is not None for t in state.turns] == [True, True]


def test_a_question_numbers_its_options_and_a_number_answers_with_one(tmp_path: Path) -> None:
    ask = tool_reply(
        "request_user_input", {"question": "Which colour?", "options": ["red", "green", "blue"]}
    )
    with serve([FakeResponse(chunks=tuple(ask)), answer("green it is")]) as provider:
        child = _session(tmp_path, provider)
        child.send("paint it" + ENTER)
        child.expect_exact("question: Which colour?")
        for line in ("1. red", "2. green", "3. blue"):
            child.expect_exact(line)
        child.expect_exact("answer (1-3 or your own):")
        child.send("7" + ENTER)
        child.expect_exact("there is no option 7: type 1 to 3, or your own answer")
        child.send("2" + ENTER)
        child.expect_exact("answered: green")
        child.expect("turn completed")
        child.send("/quit" + ENTER)
        code, text = finish(child)
    assert code == 0, text
    home = tmp_path / "home"
    (answered,) = [
        e for e in events_of(home, only_thread(home)) if isinstance(e, ev.UserInputResolved)
    ]
    assert answered.answer == "green"


def test_slash_commands(tmp_path: Path) -> None:
    with serve([answer("one"), answer("two")]) as provider:
        child = _session(tmp_path, provider)
        child.send("/usage" + ENTER)
        child.expect("no thread yet")
        child.send("hello" + ENTER)
        child.expect("turn completed")
        for command, shown in [
            ("/help", "/undo-rewind"),
            ("/title Fix the bug", "title: Fix the bug"),
            ("/approval never", "approval never"),
            ("/approval sometimes", "no approval policy"),
            ("/usage", "no usage reported"),
            ("/threads", "Fix the bug"),
            ("/rewind 5", "there is no turn 5"),
            ("/rewind \u00b2", "/rewind takes the number of the first turn"),
            ("/fork \u00b2", "/fork takes the number"),
            ("/rewind", "hid turn 1 (nothing"),
            ("/undo-rewind", "brought back 1"),
            ("/bogus", "unknown command /bogus"),
            ("/fork 2", "there is no turn 2"),
            ("/fork 1", "keeping turns 1..1"),
        ]:
            child.send(command + ENTER)
            child.expect_exact(shown)
        child.send("/new" + ENTER)
        child.expect("new thread")
        child.send("fresh" + ENTER)
        child.expect("turn completed")
        child.send("/quit" + ENTER)
        code, text = finish(child)
    assert code == 0, text
    home = tmp_path / "home"
    threads = sorted(home.joinpath("threads").iterdir())
    assert len(threads) == 3
    states = [state_of(home, p.name) for p in threads]
    original = next(s for s in states if s.forked_from is None and s.settings.title != "New Thread")
    kinds = [type(e).__name__ for e in events_of(home, original.thread_id)]
    assert {"ThreadRewound", "ThreadRewindUndone"} <= set(kinds)
    assert original.settings.approval_policy == "never" and len(original.visible_turns) == 1
    forked = next(s for s in states if s.forked_from is not None)
    assert forked.forked_from is not None and forked.forked_from.thread_id == original.thread_id
    fresh = next(s for s in states if s not in (original, forked))
    assert [t.status for t in fresh.turns] == ["completed"]


def _past_thread(home: Path, thread_id: str, workspace: Path, at: int, text: str) -> None:
    b = LogBuilder(thread_id, start_at=at)
    b.create(workspace=str(workspace.resolve()), provider="fake", model="old-model", title=text)
    b.start_turn(text, provider="fake", model="old-model")
    b.assistant_text([f"answer to {text}"])
    b.complete()
    path = home / "threads" / thread_id / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in b.events))


def test_continue_picks_the_latest_thread_of_this_workspace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    here, elsewhere = tmp_path / "ws", tmp_path / "other"
    here.mkdir()
    elsewhere.mkdir()
    _past_thread(home, "thr_aaa_old", here, 1_000_000, "older here")
    _past_thread(home, "thr_bbb_new", here, 2_000_000, "newer here")
    _past_thread(home, "thr_ccc_other", elsewhere, 3_000_000, "newest elsewhere")
    with serve([answer("continued")]) as provider:
        child = _session(tmp_path, provider, "-c")
        child.send("go on" + ENTER)
        child.expect("continued")
        child.expect("turn completed")
        child.send("\x04")
        code, text = finish(child)
    assert code == 0, text
    assert "resumed thr_bbb_new" in text and "answer to newer here" in text
    assert "resumed thr_bbb_new · newer here · 1 turn · fake/old-model" in text  # not "1 turns"
    assert _user_texts(home, "thr_bbb_new") == ["newer here", "go on"]
    assert [r["model"] for r in _requests(provider)] == ["old-model"]


def test_resume_takes_an_id_prefix_or_a_pick_from_the_list(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "ws").mkdir()
    _past_thread(home, "thr_aaa_old", tmp_path / "ws", 1_000_000, "older")
    _past_thread(home, "thr_bbb_new", tmp_path / "ws", 2_000_000, "newer")
    with serve([]) as provider:
        child = _session(tmp_path, provider, "resume", "aaa")
        child.send("\x04")
        _, text = finish(child)
        assert "resumed thr_aaa_old" in text
        config = write_config(tmp_path, provider.base_url)
        child = spawn(["resume", "--config", str(config), "--home", str(home)], cwd=tmp_path / "ws")
        child.expect("resume which")
        child.send("2" + ENTER)
        child.expect(READY)
        child.send("\x04")
        _, text = finish(child)
    assert "resumed thr_aaa_old" in text and " 1  thr_bbb_new" in text


def test_without_a_terminal_the_session_is_one_error_line(tmp_path: Path) -> None:
    code, out, err = kun("--home", str(tmp_path))
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "needs a terminal" in err
    assert f"kun run PROMPT --home {tmp_path}\n" in err


def test_with_no_terminal_to_pick_on_the_hint_names_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stdin and stdout are terminals but the controlling one cannot be
    opened (a detached session): the picker cannot ask, and says how to
    name the thread in this home."""
    from click.testing import CliRunner

    from kun.chat import start
    from kun.cli import tty
    from kun.entry import cli

    home = tmp_path / "home"
    _past_thread(home, "thr_aaa_old", tmp_path, 1_000_000, "old")
    monkeypatch.setattr(start, "needs_terminal", lambda: None)
    monkeypatch.setattr(tty, "open_terminal", lambda: None)
    result = CliRunner().invoke(cli, ["resume", "--home", str(home)], env={"KUN_HOME": ""})
    assert result.exit_code == 1
    assert result.stderr == (
        f"kun: error: no terminal to pick on: give the thread id, kun resume ID --home {home}\n"
    )


def test_continue_with_no_thread_here_is_one_error_line(tmp_path: Path) -> None:
    child = spawn(["-c", "--home", str(tmp_path / "home")], cwd=tmp_path)
    code, text = finish(child)
    assert code == 1
    assert text.strip().startswith("kun: error: no thread to continue")


def test_an_id_prefix_works_wherever_a_thread_is_named(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _past_thread(home, "thr_01abc9", tmp_path, 1_000_000, "one")
    _past_thread(home, "thr_01abd7", tmp_path, 2_000_000, "two")
    code, out, _ = kun("replay", "thr_01abc", "--home", str(home))
    assert code == 0 and "thread thr_01abc9" in out
    code, out, _ = kun("usage", "01abd", "--home", str(home))
    assert code == 0 and "thr_01abd7" in out
    code, out, _ = kun("fork", "01abd", "--home", str(home))
    assert code == 0 and out.startswith("thr_")
    code, out, err = kun("replay", "01ab", "--home", str(home))
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "ambiguous" in err and "thr_01abc9" in err and "thr_01abd7" in err
    code, _, err = kun("rewind", "01zz", "--before-turn", "t", "--home", str(home))
    assert code == 1 and "not found" in err


def test_the_cli_starts_without_the_session_libraries() -> None:
    """prompt_toolkit and rich load only when a session starts, so `kun
    replay` and `kun --help` stay fast."""
    code = (
        "import sys, kun.cli; "
        "print([m for m in ('prompt_toolkit', 'rich', 'kun.chat.session') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr


def test_a_looping_model_ends_the_turn_with_one_readable_line(tmp_path: Path) -> None:
    loop = [
        FakeResponse(chunks=tuple(tool_reply("read_file", {"path": "a.py"}, call_id=f"c{n}")))
        for n in range(40)
    ]
    with serve([*loop]) as provider:
        child = _session(tmp_path, provider)
        child.send("what does a.py print?" + ENTER)
        child.expect("turn failed")
        child.send("\x04")
        code, text = finish(child)
        calls = len(_requests(provider))
    assert code == 0, text
    assert calls <= 24
    (line,) = [row for row in text.splitlines() if "tool_storm_stopped" in row]
    assert "the model kept repeating tool calls kun had refused" in line
    assert "Traceback" not in text
