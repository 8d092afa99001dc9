"""``/plan [on|off]`` in the interactive session, in a real pseudo-terminal:
the next turns run in plan mode, the plan is shown, ``/plan`` shows it again."""

from __future__ import annotations

from pathlib import Path

from kun.contracts.items import Plan
from tests.terminal_support import answer, finish, serve, spawn, state_of, write_config

ENTER = "\r"
PLAN = "1. Add the flag\n2. Write a test\n\nDoes this look right?"


def test_plan_on_makes_the_next_turns_plan_mode_turns(tmp_path: Path) -> None:
    with serve([answer(PLAN), answer("done")]) as provider:
        config = write_config(tmp_path, provider.base_url)
        workspace = tmp_path / "ws"
        workspace.mkdir()
        home = tmp_path / "home"
        child = spawn(["--config", str(config), "--home", str(home)], cwd=workspace)
        child.expect("Ctrl-D leaves")
        for command, shown in [
            ("/plan", "plan mode off"),
            ("/plan maybe", "/plan takes on or off"),
            ("/plan on", "plan mode on"),
        ]:
            child.send(command + ENTER)
            child.expect_exact(shown)
        child.send("plan a flag" + ENTER)
        child.expect_exact("plan recorded")
        child.expect("turn completed")
        child.send("/plan" + ENTER)
        child.expect_exact("plan mode on")
        child.expect_exact("  2. Write a test")
        child.send("/plan off" + ENTER)
        child.expect_exact("plan mode off")
        child.send("do it" + ENTER)
        child.expect("turn completed")
        child.send("/quit" + ENTER)
        code, text = finish(child)
    assert code == 0, text
    (thread,) = (home / "threads").iterdir()
    first, second = state_of(home, thread.name).turns
    assert first.plan_mode and not second.plan_mode
    assert [i.markdown for i in first.items if isinstance(i, Plan)] == [PLAN]
