"""``kun resume`` on a thread whose workspace is not a folder here (an
imported thread names the other machine's): the session says so at once and
refuses its turns with the way out; ``kun resume T --workspace DIR`` rebinds
the thread (``thread_updated``, said in the session) and its turns run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kun.contracts import events as ev
from tests.terminal_support import answer, events_of, finish, serve, spawn, state_of, write_config
from tests.test_chat import ENTER, READY, _past_thread, _user_texts

pytestmark = pytest.mark.slow

THREAD = "thr_gone_elsewhere"
GONE = "does not exist here"


def test_resume_says_the_workspace_is_gone_and_workspace_rebinds_it(tmp_path: Path) -> None:
    home, here = tmp_path / "home", tmp_path / "ws"
    here.mkdir()
    gone = tmp_path / "gone"
    gone.mkdir()
    _past_thread(home, THREAD, gone, 1_000_000, "before")
    gone.rmdir()
    with serve([answer("back at work")]) as provider:
        config = write_config(tmp_path, provider.base_url)
        base = ["resume", THREAD, "--config", str(config), "--home", str(home)]
        child = spawn(base, cwd=here)
        child.expect(GONE)
        child.expect(re.escape(f"kun resume {THREAD} --workspace DIR --home {home}"))
        child.expect(READY)
        child.send("hello" + ENTER)
        child.expect(re.escape(f"kun resume {THREAD} --workspace DIR --home {home}"))
        child.send("\x04")
        code, _ = finish(child)
        assert code == 0
        assert _user_texts(home, THREAD) == ["before"]

        child = spawn([*base, "--workspace", str(here)], cwd=tmp_path)
        child.expect(f"now works in {here}")
        child.expect(READY)
        child.send("go on" + ENTER)
        child.expect("back at work")
        child.expect("turn completed")
        child.send("\x04")
        code, text = finish(child)
    assert code == 0, text
    assert GONE not in text
    assert _user_texts(home, THREAD) == ["before", "go on"]
    assert state_of(home, THREAD).settings.workspace == str(here)
    updates = [e for e in events_of(home, THREAD) if isinstance(e, ev.ThreadUpdated)]
    assert updates[-1].workspace == str(here)
