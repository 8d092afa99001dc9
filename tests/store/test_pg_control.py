"""Requests for a thread's writer from another worker (the PostgreSQL
store's control channel): the writer answers, nobody else does; with no
writer the asker knows at once; a writer that never answers costs the
asker its patience and leaves no row behind; what was asked before the
writer listened is answered when it does."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import psycopg
import pytest

from kun.store import PostgresEventStore
from kun.store.pg_control import ControlHandler
from tests.store.factories import TID, warning

pytestmark = pytest.mark.anyio

WAIT = 10.0


async def _echo(thread_id: str, kind: str, body: bytes) -> bytes:
    return f"{thread_id} {kind} ".encode() + body


@asynccontextmanager
async def _serving(
    store: PostgresEventStore, handler: ControlHandler = _echo
) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        await tg.start(store.control().serve, handler, store.holds)
        yield
        tg.cancel_scope.cancel()


def _rows(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM control").fetchone()
        assert row is not None
        return int(row[0])


async def test_the_writer_answers_a_request_from_another_worker(postgres_url: str) -> None:
    async with (
        PostgresEventStore(postgres_url) as writer,
        PostgresEventStore(postgres_url) as other,
        PostgresEventStore(postgres_url) as asker,
    ):
        await writer.append(TID, [warning(1)], expected_seq=0)
        async with _serving(writer), _serving(other):
            with anyio.fail_after(WAIT):
                reply = await asker.control().ask(TID, "steer", b"go on", patience=WAIT)
        assert reply == f"{TID} steer go on".encode()
    assert _rows(postgres_url) == 0


async def test_no_writer_is_known_at_once(postgres_url: str) -> None:
    async with PostgresEventStore(postgres_url) as asker:
        await asker.append(TID, [warning(1)], expected_seq=0)
        await asker.release(TID)
        started = time.monotonic()
        assert await asker.control().ask(TID, "interrupt", b"", patience=WAIT) is None
        assert await asker.control().ask("thr_nobody", "interrupt", b"", patience=WAIT) is None
        assert time.monotonic() - started < WAIT / 2
    assert _rows(postgres_url) == 0


async def test_a_writer_that_does_not_answer_costs_the_patience(postgres_url: str) -> None:
    async with (
        PostgresEventStore(postgres_url) as writer,
        PostgresEventStore(postgres_url) as asker,
    ):
        await writer.append(TID, [warning(1)], expected_seq=0)  # holds it, serves nothing
        started = time.monotonic()
        assert await asker.control().ask(TID, "steer", b"x", patience=0.5) is None
        assert time.monotonic() - started >= 0.5
    assert _rows(postgres_url) == 0


async def test_what_was_asked_before_the_writer_listened_is_answered(postgres_url: str) -> None:
    async with (
        PostgresEventStore(postgres_url) as writer,
        PostgresEventStore(postgres_url) as asker,
    ):
        await writer.append(TID, [warning(1)], expected_seq=0)
        replies: list[bytes | None] = []

        async def ask() -> None:
            replies.append(await asker.control().ask(TID, "answer", b"yes", patience=WAIT))

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                while _rows(postgres_url) == 0:  # noqa: ASYNC110 - a row in another database session
                    await anyio.sleep(0.01)
                async with _serving(writer):
                    while not replies:  # noqa: ASYNC110
                        await anyio.sleep(0.01)
        assert replies == [f"{TID} answer yes".encode()]
