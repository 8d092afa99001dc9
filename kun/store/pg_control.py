"""Requests for the worker that writes a thread, from any worker: steering,
an interrupt, an approval's answer reach the turn wherever it runs.

A thread has one writer (the store holding its advisory lock). A worker
that is asked to steer a turn it does not run puts the request in the
``control`` table and notifies :data:`REQUESTS` with ``thread_id:id``; the
writer (:meth:`PostgresControl.serve`, filtering by the threads it holds)
runs its handler, stores the reply in the row and notifies :data:`REPLIES`
with the id; the asker, listening before it inserted, takes the reply and
deletes the row. Bodies and replies are bytes the caller encodes (JSON).

No writer (nobody holds the thread's lock) is known before anything is
written: :meth:`PostgresControl.ask` answers ``None`` at once, as a process
that finds no control socket does. A writer that dies or lets go between
the check and the reply leaves the request unanswered: ``None`` after
``patience`` seconds, and the row is deleted. The writer also serves what was asked
while it was not listening (a reconnection, a claim just taken): on start
and on each claim it reads the pending rows of the threads it holds.
Notifications are hints; the rows are the record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus

if TYPE_CHECKING:
    from kun.store.pg_connections import AsyncConnection, Connections

__all__ = ["REPLIES", "REQUESTS", "ControlHandler", "PostgresControl"]

REQUESTS = "kun_control"
REPLIES = "kun_control_reply"
POLL_SECONDS = 0.5
"""How often an asker looks at its row when no reply notification came (one
lost with a connection)."""

ControlHandler = Callable[[str, str, bytes], Awaitable[bytes | None]]
"""``(thread_id, kind, body) -> reply``: what the writer does with a request;
``None``: not this worker's to answer (a broadcast it knows nothing of)."""

_ASK = f"""
WITH asked AS (
    INSERT INTO control (thread_id, kind, body, created_at) VALUES (%s, %s, %s, %s)
    RETURNING id, thread_id
)
SELECT asked.id, pg_notify('{REQUESTS}', asked.thread_id || ':' || asked.id::text) FROM asked
"""
_REPLY = "SELECT reply FROM control WHERE id = %s"
_AGAIN = f"SELECT pg_notify('{REQUESTS}', %s)"
_FORGET = "DELETE FROM control WHERE id = %s"
_PENDING = "SELECT id, thread_id, kind, body FROM control WHERE reply IS NULL ORDER BY id"
_ONE = "SELECT thread_id, kind, body FROM control WHERE id = %s AND reply IS NULL"
_ANSWER = f"""
WITH answered AS (
    UPDATE control SET reply = %s WHERE id = %s AND reply IS NULL RETURNING id
)
SELECT pg_notify('{REPLIES}', answered.id::text) FROM answered
"""

_log = logging.getLogger(__name__)


class PostgresControl:
    """The control requests of one database (see the module docstring)."""

    def __init__(self, db: Connections, writer_alive: Callable[[str], Awaitable[bool]]) -> None:
        self._db = db
        self._writer_alive = writer_alive
        self._answering: set[int] = set()

    async def ask(
        self, thread_id: str, kind: str, body: bytes, *, patience: float, broadcast: bool = False
    ) -> bytes | None:
        """The reply of the thread's writer, or ``None``: no writer now, or
        none answered within ``patience`` seconds. ``broadcast``:
        ``thread_id`` names no thread but a request every worker reads (its
        ``holds`` decides), answered by the first whose handler replies."""
        if not broadcast and not await self._writer_alive(thread_id):
            return None
        with self._db.translated():
            return await self._ask(thread_id, kind, body, patience, broadcast)

    async def _ask(
        self, thread_id: str, kind: str, body: bytes, patience: float, broadcast: bool
    ) -> bytes | None:
        conn = await self._db.connect("kun-control-ask")
        try:
            await conn.execute(f"LISTEN {REPLIES}")
            row = await (
                await conn.execute(_ASK, [thread_id, kind, body, int(time.time() * 1000)])
            ).fetchone()
            assert row is not None
            request_id = int(row[0])
            try:
                with anyio.move_on_after(patience):
                    return await self._reply(conn, request_id, thread_id, broadcast)
                return None
            finally:
                with anyio.CancelScope(shield=True):
                    await conn.execute(_FORGET, [request_id])
        finally:
            with anyio.CancelScope(shield=True):
                await conn.close()

    async def _reply(
        self, conn: AsyncConnection, request_id: int, thread_id: str, broadcast: bool
    ) -> bytes | None:
        """The reply once written; ``None`` as soon as the thread has no
        writer any more. Each :data:`POLL_SECONDS` without one the request
        is announced again: a writer that let go of the thread and took it
        back (its next turn) ignored the first notification, and answers
        this one (a request being answered is not answered twice)."""
        wanted = str(request_id)
        while True:
            row = await (await conn.execute(_REPLY, [request_id])).fetchone()
            if row is not None and row[0] is not None:
                return bytes(row[0])
            async for note in conn.notifies(timeout=POLL_SECONDS):
                if note.payload == wanted:
                    break
            else:
                if not broadcast and not await self._writer_alive(thread_id):
                    row = await (await conn.execute(_REPLY, [request_id])).fetchone()
                    return None if row is None or row[0] is None else bytes(row[0])
                await conn.execute(_AGAIN, [f"{thread_id}:{request_id}"])

    async def serve(
        self,
        handler: ControlHandler,
        holds: Callable[[str], bool],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Answer the requests for the threads ``holds`` says this worker
        writes, until cancelled; a lost connection is opened again (and the
        pending rows read again). ``task_status``: started once listening."""
        import psycopg

        started = False
        while True:
            try:
                async with (
                    await self._db.connect("kun-control") as conn,
                    anyio.create_task_group() as answering,
                ):
                    await conn.execute(f"LISTEN {REQUESTS}")
                    if not started:
                        task_status.started()
                        started = True
                    await self.serve_pending(handler, holds)
                    async for note in conn.notifies():
                        thread_id, _, request_id = note.payload.rpartition(":")
                        if request_id.isdecimal() and holds(thread_id):
                            # each in a task: an interrupt waits for its turn to settle
                            answering.start_soon(self._answer_safely, int(request_id), handler)
            except psycopg.OperationalError as exc:
                _log.warning("the control channel's connection was lost (%s)", exc)
                if not started:
                    task_status.started()
                    started = True
            await anyio.sleep(POLL_SECONDS)

    async def serve_pending(self, handler: ControlHandler, holds: Callable[[str], bool]) -> None:
        """Answer the requests already waiting for threads this worker writes
        (asked while it was not listening, or before it claimed them)."""
        async with self._db.connection() as conn:
            rows = await (await conn.execute(_PENDING)).fetchall()
        for request_id, thread_id, _kind, _body in rows:
            if holds(str(thread_id)):
                await self._answer_one(int(request_id), handler)

    async def _answer_safely(self, request_id: int, handler: ControlHandler) -> None:
        """:meth:`_answer_one` in a task of its own: a failure is logged
        (the asker's patience runs out), never taken down the listener."""
        try:
            await self._answer_one(request_id, handler)
        except Exception:
            _log.exception("answering the control request %s failed", request_id)

    async def _answer_one(self, request_id: int, handler: ControlHandler) -> None:
        if request_id in self._answering:
            return  # announced again while its answer is being made
        self._answering.add(request_id)
        try:
            await self._answer_now(request_id, handler)
        finally:
            self._answering.discard(request_id)

    async def _answer_now(self, request_id: int, handler: ControlHandler) -> None:
        async with self._db.connection() as conn:
            row = await (await conn.execute(_ONE, [request_id])).fetchone()
        if row is None:
            return  # answered already, or the asker gave up
        thread_id, kind, body = str(row[0]), str(row[1]), bytes(row[2])
        try:
            reply = await handler(thread_id, kind, body)
        except Exception:
            _log.exception("thread %s: the control request %s failed", thread_id, kind)
            return
        if reply is None:
            return
        async with self._db.connection() as conn:
            await conn.execute(_ANSWER, [reply, request_id])
