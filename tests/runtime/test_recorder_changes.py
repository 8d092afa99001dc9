"""A follower on one worker sees the events another worker commits to the
same PostgreSQL database as they are committed (the store's change feed),
in order, each once — with the periodic look at the log's end turned off,
so only the feed can wake it."""

from __future__ import annotations

import anyio
import pytest

from kun.contracts import events as ev
from kun.runtime.recorder import EventRecorder
from kun.store import PostgresEventStore

pytestmark = pytest.mark.anyio

TID = "thr_relay"
WAIT = 10.0


async def test_a_follower_here_gets_what_another_worker_commits(postgres_url: str) -> None:
    async with (
        PostgresEventStore(postgres_url) as theirs,
        PostgresEventStore(postgres_url) as ours,
        EventRecorder(theirs, coalesce_ms=0) as writer,
        EventRecorder(ours, watch_seconds=0) as reader,
    ):
        await writer.record(TID, ev.ThreadCreated(seq=0, at=0, thread_id=""))
        follower = reader.subscribe(TID, after=0)
        seen: list[int] = []

        async def follow() -> None:
            async for event in follower:
                seen.append(event.seq)
                if event.seq == 21:
                    return

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(follow)
                for _ in range(20):
                    await anyio.sleep(0.01)
                    await writer.record(
                        TID, ev.WarningEvent(seq=0, at=0, thread_id="", code="t", message="m")
                    )
        await follower.aclose()
    assert seen == list(range(1, 22))
