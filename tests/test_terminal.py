"""The live view of a turn in a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest

from kun.app.local import LocalKun
from kun.cli.terminal import LiveView, PlainSink
from kun.model.scripted import text_reply, tool_reply
from tests.runtime.support import harness

pytestmark = pytest.mark.anyio


async def _follow(tmp_path: Path, script: list, *, interactive: bool, delay: float = 0.0) -> str:
    out = io.StringIO()
    async with harness(tmp_path, script, delay=delay) as h:
        kun = LocalKun(h.home, h.service.recorder, h.service)
        view = LiveView(kun, h.thread_id, PlainSink(out, spinner=interactive))
        after = h.state().last_seq
        turn_id = await h.service.start_turn(h.thread_id, "go", disable_user_input=True)
        with anyio.fail_after(10):
            await view.follow(after, turn_id)
    return out.getvalue()


async def test_the_live_view_shows_text_tools_and_the_outcome(tmp_path: Path) -> None:
    script = [
        tool_reply("read_file", {"path": "a.py"}, text="Reading."),
        text_reply("It prints a."),
    ]
    shown = await _follow(tmp_path, script, interactive=False)
    lines = shown.split("\n")
    assert lines[:2] == ["Reading.", '-> read_file({"path":"a.py"})']
    assert lines[2].startswith("   ok: ") and "print('a')" in lines[2]
    assert lines[3] == "It prints a."
    assert "turn completed" in shown and "waiting for the model" not in shown


async def test_a_spinner_runs_while_the_model_thinks_and_is_cleared(tmp_path: Path) -> None:
    shown = await _follow(tmp_path, [text_reply("done")], interactive=True, delay=0.35)
    assert "waiting for the model" in shown
    assert "\r\x1b[2K" in shown
    assert shown.rstrip().split("\n")[-1].startswith("turn completed")
