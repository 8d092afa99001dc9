"""The PostgreSQL store's change feed: every committed append reaches every
listener as ``thread_id:last_seq``, in commit order; a refused append and a
notification kun did not send reach nobody."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import psycopg
import pytest

from kun.store import PostgresEventStore, SeqConflict
from kun.store.pg_changes import CHANNEL, Changed, ChangeFeed, parse
from tests.store.factories import TID, warning, warnings

pytestmark = pytest.mark.anyio

WAIT = 10.0


async def _next(feed: AsyncIterator[Changed]) -> Changed:
    with anyio.fail_after(WAIT):
        return await anext(feed)


async def test_each_commit_reaches_a_listener_of_another_store(postgres_url: str) -> None:
    async with (
        PostgresEventStore(postgres_url) as writer,
        PostgresEventStore(postgres_url) as reader,
    ):
        async with await reader.changes() as feed:
            seen = aiter(feed)
            await writer.append(TID, warnings(1, 3), expected_seq=0)
            await writer.append("thr_other", [warning(1, "thr_other")], expected_seq=0)
            await writer.append(TID, [warning(4)], expected_seq=3, durable=False)
            assert [await _next(seen) for _ in range(3)] == [
                Changed(TID, 3),
                Changed("thr_other", 1),
                Changed(TID, 4),
            ]
            assert [e.seq for e in reader.read(TID, after=3)] == [4]


async def test_a_refused_append_and_a_stranger_notify_nobody(postgres_url: str) -> None:
    async with (
        PostgresEventStore(postgres_url) as writer,
        PostgresEventStore(postgres_url) as reader,
    ):
        await writer.append(TID, warnings(1, 2), expected_seq=0)
        async with await reader.changes() as feed:
            seen = aiter(feed)
            with pytest.raises(SeqConflict):
                await writer.append(TID, [warning(2)], expected_seq=1)
            async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as c:
                await c.execute("SELECT pg_notify(%s, 'not kun''s')", [CHANNEL])
                await c.execute("NOTIFY elsewhere, 'thr_x:9'")
            await writer.append(TID, [warning(3)], expected_seq=2)
            assert await _next(seen) == Changed(TID, 3)


async def test_the_feed_ends_when_its_connection_is_lost(postgres_url: str) -> None:
    async with PostgresEventStore(postgres_url) as reader:
        feed: ChangeFeed = await reader.changes()
        async with feed:
            async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as c:
                await c.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = 'kun-changes'"
                )
            with anyio.fail_after(WAIT):
                assert [changed async for changed in feed] == []


def test_payloads() -> None:
    assert parse("thr_a:12") == Changed("thr_a", 12)
    assert parse("thr:with:colons:3") == Changed("thr:with:colons", 3)
    assert parse("thr_a:") is None and parse(":3") is None and parse("no seq") is None
