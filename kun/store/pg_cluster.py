"""The workers sharing one PostgreSQL database: who is alive, which
workspaces each can reach, which threads a dead one left, and which
threads wait for a worker that can serve them.

A worker is named by the database session that holds its locks
(:meth:`kun.store.postgres.PostgresEventStore.session`: the backend's pid
and start time, which together never name two sessions). That session is
alive exactly as long as the worker's thread locks are, so the database
itself says who died: no heartbeat, no clock, no expiry to tune. A worker
that is SIGKILLed closes its sockets; the server ends the session and lets
go of its advisory locks at once.

- ``threads.writer_pid``/``writer_since`` name the session writing a thread
  (set on claim, cleared on release): :meth:`PostgresCluster.orphaned` is
  every thread whose writer's session is gone, for a survivor to settle.
- ``workers`` lists the serving workers and their workspace roots
  (:meth:`join`); rows of dead sessions are pruned by whoever reads them.
- ``waiting`` holds threads with queued turns and no writer (their worker
  could not serve the workspace, or died); :meth:`claim_waiting` gives them
  out with ``FOR UPDATE SKIP LOCKED``, so two workers never take the same
  one, and only to a worker whose roots hold the workspace (a thread with
  no workspace goes to anyone). :data:`WAKE` is notified when one is added.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

if TYPE_CHECKING:
    from kun.store.pg_connections import AsyncConnection, Connections

__all__ = ["WAKE", "PostgresCluster", "Worker", "covers"]

WAKE = "kun_waiting"

_ALIVE = """EXISTS (
    SELECT 1 FROM pg_stat_activity a WHERE a.pid = {pid} AND a.backend_start = {since}
)"""
_JOIN = """
INSERT INTO workers (pid, since, host, roots, joined_at) VALUES (%s, %s, %s, %s, %s)
ON CONFLICT (pid, since) DO UPDATE SET roots = excluded.roots, host = excluded.host
"""
_LEAVE = "DELETE FROM workers WHERE pid = %s AND since = %s"
_PRUNE = f"DELETE FROM workers w WHERE NOT {_ALIVE.format(pid='w.pid', since='w.since')}"
_WORKERS = "SELECT pid, since, host, roots FROM workers ORDER BY joined_at"
_ORPHANED = f"""
SELECT t.thread_id FROM threads t
WHERE t.writer_pid IS NOT NULL
    AND NOT {_ALIVE.format(pid="t.writer_pid", since="t.writer_since")}
ORDER BY t.updated_at
"""
_WAIT = f"""
WITH added AS (
    INSERT INTO waiting (thread_id, workspace, since) VALUES (%s, %s, %s)
    ON CONFLICT (thread_id) DO NOTHING RETURNING thread_id
)
SELECT pg_notify('{WAKE}', added.thread_id) FROM added
"""
_ROOTED = """(
    w.workspace IS NULL OR EXISTS (
        SELECT 1 FROM unnest(%(roots)s::text[]) r
        WHERE r = '/' OR w.workspace = r OR starts_with(w.workspace, r || '/')
    )
)"""
_CLAIMABLE = f"""
SELECT w.thread_id FROM waiting w WHERE {_ROOTED}
ORDER BY w.since LIMIT %(limit)s FOR UPDATE SKIP LOCKED
"""
_TAKEN = "DELETE FROM waiting WHERE thread_id = %s"
_WAITING = "SELECT workspace FROM waiting WHERE thread_id = %s"


class Worker(msgspec.Struct, frozen=True):
    """A serving worker: its session, its host, its workspace roots."""

    pid: int
    since: Any
    host: str
    roots: tuple[str, ...]

    def serves(self, workspace: str | None) -> bool:
        return covers(self.roots, workspace)


def covers(roots: Sequence[str], workspace: str | None) -> bool:
    """Whether a worker with ``roots`` can run a thread in ``workspace``
    (``None``: a thread with no folder, which runs anywhere). Roots and
    workspaces are absolute paths without a trailing slash; ``/`` holds
    every workspace. Mirrors :data:`_ROOTED`."""
    if workspace is None:
        return True
    return any(r == "/" or workspace == r or workspace.startswith(r + "/") for r in roots)


class PostgresCluster:
    """The cluster tables of one database (see the module docstring).
    ``session`` gives this store's session; ``try_claim`` takes a thread's
    writer lock if it is free (``False`` if another writer holds it)."""

    def __init__(
        self,
        db: Connections,
        session: Callable[[], Awaitable[tuple[int, Any]]],
        try_claim: Callable[[str], Awaitable[bool]],
    ) -> None:
        self._db = db
        self._session = session
        self._try_claim = try_claim

    async def join(self, roots: Sequence[str]) -> None:
        """List this worker as serving the workspaces under ``roots``."""
        pid, since = await self._session()
        now = int(time.time() * 1000)
        async with self._db.connection() as conn:
            await conn.execute(_JOIN, [pid, since, socket.gethostname(), list(roots), now])

    async def leave(self) -> None:
        pid, since = await self._session()
        async with self._db.connection() as conn:
            await conn.execute(_LEAVE, [pid, since])

    async def workers(self) -> list[Worker]:
        """The live serving workers (dead ones' rows are removed)."""
        async with self._db.connection() as conn:
            await conn.execute(_PRUNE)
            rows = await (await conn.execute(_WORKERS)).fetchall()
        return [Worker(int(p), since, str(h), tuple(r)) for p, since, h, r in rows]

    async def orphaned(self) -> list[str]:
        """Threads whose writer's session is gone (a worker that died while
        it wrote them), oldest activity first."""
        async with self._db.connection() as conn:
            rows = await (await conn.execute(_ORPHANED)).fetchall()
        return [str(row[0]) for row in rows]

    async def wait(self, thread_id: str, workspace: str | None) -> None:
        """Put the thread among those waiting for a worker (once)."""
        now = int(time.time() * 1000)
        async with self._db.connection() as conn:
            await conn.execute(_WAIT, [thread_id, workspace, now])

    async def waiting(self, thread_id: str) -> bool:
        async with self._db.connection() as conn:
            return await (await conn.execute(_WAITING, [thread_id])).fetchone() is not None

    async def claim_waiting(self, roots: Sequence[str], *, limit: int = 8) -> list[str]:
        """Take up to ``limit`` waiting threads this worker can serve, each
        with its writer lock held (a thread another writer holds now stays
        waiting: its writer runs its queue). Exactly once across workers:
        the rows are locked ``SKIP LOCKED`` and deleted in one transaction."""
        taken: list[str] = []
        async with self._db.connection() as conn, conn.transaction():
            cursor = await conn.execute(_CLAIMABLE, {"roots": list(roots), "limit": limit})
            for (thread_id,) in await cursor.fetchall():
                if await self._try_claim(str(thread_id)):
                    await conn.execute(_TAKEN, [thread_id])
                    taken.append(str(thread_id))
        return taken

    async def listen(self) -> AsyncConnection:
        """A connection of its own listening on :data:`WAKE`, for the
        caller to read notifications from and close."""
        with self._db.translated():
            conn = await self._db.connect("kun-waiting")
            try:
                await conn.execute(f"LISTEN {WAKE}")
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await conn.close()
                raise
        return conn
