"""Under an active goal the session shows the turn kun resumes by itself
(after the 2 s first backoff: the one real wait of this test), in a real
pseudo-terminal, and stops when the model reports the goal complete."""

from __future__ import annotations

from pathlib import Path

from kun.model.scripted import tool_reply
from kun.testing.fake_provider import FakeResponse
from tests.terminal_support import answer, finish, only_thread, serve, spawn, state_of, write_config

ENTER = "\r"


def test_the_session_follows_a_goal_resume_to_completion(tmp_path: Path) -> None:
    script = [
        answer("First part done."),
        FakeResponse(chunks=tuple(tool_reply("update_goal", {"status": "complete"}))),
        answer("The goal is complete."),
    ]
    with serve(script) as provider:
        config = write_config(tmp_path, provider.base_url)
        workspace = tmp_path / "ws"
        workspace.mkdir()
        home = tmp_path / "home"
        child = spawn(["--config", str(config), "--home", str(home)], cwd=workspace)
        child.expect("Ctrl-D leaves")
        child.send("/goal ship the release notes" + ENTER)
        child.expect_exact("ship the release notes")
        child.send("start" + ENTER)
        child.expect_exact("First part done.")
        child.expect_exact("kun continues in 2 s")
        child.expect_exact("The goal is complete.")
        child.expect("turn completed")
        child.send("/quit" + ENTER)
        code, text = finish(child)
    assert code == 0, text
    state = state_of(home, only_thread(home))
    assert [t.status for t in state.turns] == ["completed", "completed"]
    assert state.settings.goal is not None and state.settings.goal.status == "complete"
