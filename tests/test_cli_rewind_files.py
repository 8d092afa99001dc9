"""``kun rewind THREAD TURN --files`` and ``--undo`` from the command line:
what it restores, what it leaves alone and says so, and ``kun replay``
showing the restore (issue 13, item 1)."""

from __future__ import annotations

from pathlib import Path

import anyio
from click.testing import CliRunner

from kun.entry import cli
from kun.model.scripted import text_reply, tool_reply
from tests.runtime.support import harness


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _turns(tmp_path: Path) -> tuple[str, Path]:
    """Turn 1 creates notes.md, turn 2 edits a.py and creates new.txt."""
    script = [
        tool_reply("write_file", {"path": "notes.md", "content": "# notes\n"}),
        text_reply("ok"),
        tool_reply("edit_file", {"path": "a.py", "old_string": "'a'", "new_string": "'A'"}),
        tool_reply("write_file", {"path": "new.txt", "content": "new\n"}, call_id="c2"),
        text_reply("ok"),
    ]

    async def go() -> tuple[str, Path]:
        async with harness(tmp_path, script, policy="full-auto") as h:
            for prompt in ("notes", "edit"):
                turn = await h.run(prompt)
                assert turn.status == "completed", turn.error
            return h.thread_id, h.workspace

    return anyio.run(go)


def test_rewind_files_then_undo_from_the_cli(tmp_path: Path) -> None:
    thread, ws = _turns(tmp_path)
    (ws / "notes.md").write_text("# my notes\n")
    home = ("--home", str(tmp_path / "home"))
    code, out, err = _run("rewind", thread, "1", "--files", *home)
    assert code == 0, err
    assert "files: restored 2, left alone 1" in out
    assert "bash commands did is not tracked" in out
    assert "  a.py: restored" in out and "  new.txt: removed (kun had created it)" in out
    assert "  notes.md: NOT restored: changed since kun changed it" in out
    assert (ws / "a.py").read_text() == "print('a')\n" and not (ws / "new.txt").exists()
    assert (ws / "notes.md").read_text() == "# my notes\n"

    code, shown, _ = _run("replay", thread, *home)
    assert "files restored by the rewind at seq" in shown and "new.txt (removed)" in shown
    assert "not restored: notes.md" in shown

    code, out, err = _run("rewind", thread, "--undo", *home)
    assert code == 0, err
    assert "files: put back 2, left alone 0" in out
    assert (ws / "a.py").read_text() == "print('A')\n" and (ws / "new.txt").read_text() == "new\n"
    code, shown, _ = _run("replay", thread, *home)
    assert "files put back by the undo of the rewind at seq" in shown


def test_rewind_without_files_says_nothing_about_files(tmp_path: Path) -> None:
    thread, ws = _turns(tmp_path)
    code, out, err = _run("rewind", thread, "--before-turn", "2", "--home", str(tmp_path / "home"))
    assert code == 0, err
    assert "files:" not in out and (ws / "new.txt").exists()


def test_the_turn_given_twice_is_one_readable_line(tmp_path: Path) -> None:
    thread, _ = _turns(tmp_path)
    code, _, err = _run(
        "rewind", thread, "1", "--before-turn", "2", "--home", str(tmp_path / "home")
    )
    assert code != 0 and "give the turn once" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
