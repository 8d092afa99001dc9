"""``/compact`` in the interactive session: it waits for the compaction turn
and says what it did; nothing to summarise, a failed summary and a misuse
are one line each."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kun.app.interface import Kun
from kun.chat.commands import run_command
from kun.contracts.items import Compaction
from kun.contracts.model import ErrorChunk
from kun.model.scripted import text_reply
from tests.app.support import local
from tests.runtime.test_compaction_loop import LONG, _summary

pytestmark = pytest.mark.anyio


@dataclass
class FakeSession:
    """The parts of a ChatSession that ``/compact`` uses."""

    kun: Kun
    thread_id: str | None = None
    turn_id: str | None = None
    lines: list[tuple[str, str]] = field(default_factory=list)

    def say(self, text: str, tone: str = "plain") -> None:
        self.lines.append((text, tone))


async def _compact(session: FakeSession, rest: str = "") -> tuple[str, str]:
    await run_command(session, f"/compact {rest}".rstrip())  # type: ignore[arg-type]
    return session.lines[-1]


async def test_compact_summarises_and_says_so(tmp_path: Path) -> None:
    async with local(tmp_path, [text_reply(LONG), _summary()]) as h:
        s = FakeSession(h.kun)
        text, tone = await _compact(s)
        assert (text, tone) == ("no thread yet: send a message first", "error")
        s.thread_id = await h.new_thread()
        text, _ = await _compact(s)
        assert text.startswith("nothing to compact: ")
        await h.run(s.thread_id, "hello")
        text, tone = await _compact(s)
        assert tone == "good" and text.startswith("compacted 2 items into a summary of about ")
        assert s.turn_id is None
        last = (await h.kun.thread(s.thread_id)).turns[-1]
        assert [type(i) for i in last.items] == [Compaction]
        assert (await _compact(s))[0].startswith("nothing to compact: ")
        assert (await _compact(s, "now"))[0] == "/compact takes no argument"


async def test_a_failed_compaction_is_one_error_line(tmp_path: Path) -> None:
    failed = [ErrorChunk(code="server_error", message="boom")]
    async with local(tmp_path, [text_reply(LONG), failed]) as h:
        s = FakeSession(h.kun, await h.new_thread())
        await h.run(s.thread_id, "hello")
        text, tone = await _compact(s)
    assert tone == "error" and "boom" in text and "\n" not in text


async def test_compact_waits_while_a_turn_runs(tmp_path: Path) -> None:
    async with local(tmp_path, []) as h:
        s = FakeSession(h.kun, await h.new_thread(), turn_id="turn_running")
        text, _ = await _compact(s)
    assert text == "/compact waits until the turn ends (Esc interrupts it)"
