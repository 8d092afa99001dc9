"""Reads need no model: a home with no usable configuration (here a
``--config`` naming a file that is not there) can still list, replay,
follow and count its threads; only a call that runs a turn opens the
engine, and then the configuration's error is the caller's."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.app.local import open_local
from kun.app.requests import StartTurn
from kun.contracts import events as ev
from kun.errors import KunError
from kun.model.scripted import text_reply
from tests.app.support import local

pytestmark = pytest.mark.anyio


async def _a_home_with_a_thread(tmp_path: Path) -> tuple[Path, str]:
    async with local(tmp_path, [text_reply("hello there")]) as t:
        thread = await t.new_thread(title="greeting")
        await t.run(thread, "hi")
        return t.home, thread


async def test_reads_open_no_engine(tmp_path: Path) -> None:
    home, thread = await _a_home_with_a_thread(tmp_path)
    missing = tmp_path / "missing.toml"
    async with open_local(home, config=missing) as kun:
        state = await kun.thread(thread[:12])
        assert state.thread_id == thread and state.turns[0].status == "completed"
        page = await kun.threads()
        assert [s.thread_id for s in page.threads] == [thread] and page.next_cursor is None
        assert "hello there" in await kun.transcript(thread)
        log = await kun.log(thread)
        assert log == (home / "threads" / thread / "events.jsonl").read_bytes()
        report = await kun.usage(thread)
        assert report.threads[0].thread_id == thread and thread in report.text
        assert (await kun.trash()).entries == []
        async with kun.follow(thread) as feed:
            with anyio.fail_after(5):
                async for event in feed:
                    if isinstance(event, ev.TurnCompleted):
                        break
        assert kun.engine is None
        with pytest.raises(KunError):
            await kun.start_turn(thread, StartTurn(text="again"))


async def test_the_thread_list_pages_by_cursor(tmp_path: Path) -> None:
    async with local(tmp_path) as t:
        ids = [await t.new_thread(title=f"title-{n}") for n in range(3)]
        first = await t.kun.threads(limit=2)
        assert first.next_cursor is not None
        rest = await t.kun.threads(limit=2, cursor=first.next_cursor)
        seen = [s.thread_id for s in (*first.threads, *rest.threads)]
        everything = [s.thread_id for s in (await t.kun.threads()).threads]
        assert seen == everything and sorted(seen) == sorted(ids) and rest.next_cursor is None
        assert [s.thread_id for s in (await t.kun.threads(query="TITLE-1")).threads] == [ids[1]]
        with pytest.raises(KunError, match="cursor is not a next_cursor"):
            await t.kun.threads(cursor="nonsense")


async def test_usage_of_one_or_two_threads_only(tmp_path: Path) -> None:
    async with local(tmp_path) as t:
        thread = await t.new_thread()
        both = await t.kun.usage(thread, thread)
        assert [u.thread_id for u in both.threads] == [thread, thread]
        for wrong in ((), (thread, thread, thread)):
            with pytest.raises(KunError, match="give one thread, or two to compare"):
                await t.kun.usage(*wrong)
