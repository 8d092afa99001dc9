"""``/rewind --files`` and ``/undo-rewind`` in the interactive session put
kun's file changes back and say what they did (issue 13, item 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from kun.app.interface import Kun
from kun.chat.commands import run_command
from kun.domain.state import ThreadState
from kun.model.scripted import text_reply, tool_reply
from tests.app.support import local

pytestmark = pytest.mark.anyio


@dataclass
class _Session:
    """What the rewind commands use of a ChatSession."""

    kun: Kun
    thread_id: str
    said: list[str] = field(default_factory=list)
    turn_id: str | None = None

    def say(self, text: str, style: str | None = None) -> None:
        self.said.append(text)

    async def refresh(self) -> ThreadState:
        return await self.kun.thread(self.thread_id)


async def test_slash_rewind_files_then_undo(tmp_path: Path) -> None:
    script = [
        tool_reply("write_file", {"path": "new.txt", "content": "new\n"}),
        text_reply("ok"),
    ]
    async with local(tmp_path, script) as h:
        thread = await h.new_thread(approval_policy="full-auto")
        await h.run(thread, "make a file")
        session = _Session(h.kun, thread)
        await run_command(cast(Any, session), "/rewind --files")
        assert not (h.workspace / "new.txt").exists()
        assert any(line.startswith("files: restored 1") for line in session.said)
        assert any("not tracked" in line for line in session.said)
        await run_command(cast(Any, session), "/undo-rewind")
        assert (h.workspace / "new.txt").read_text() == "new\n"
        assert any(line.startswith("files: put back 1") for line in session.said)
