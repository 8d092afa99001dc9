"""What other writers committed, as it is committed: the PostgreSQL store's
change feed (``LISTEN``/``NOTIFY``), so a worker learns without polling that
another worker appended to a thread its followers wait on.

Each append notifies, in the statement that writes it, on :data:`CHANNEL`
with ``thread_id:last_seq``; PostgreSQL delivers a notification only when
its transaction commits, so a :class:`Changed` always names rows a reader
can already see. Notifications are hints, not the record: several commits
may arrive as one (PostgreSQL folds identical payloads within a transaction,
never across), a listener that lost its connection missed what was sent
meanwhile, and :meth:`ChangeFeed.__aiter__` ends then. A reader therefore
reads the log from the last seq it served up to at least the seq it was
told, and after a reconnection reads every thread it follows once again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from kun.store.pg_connections import AsyncConnection

__all__ = ["CHANNEL", "ChangeFeed", "Changed", "notify_sql"]

CHANNEL = "kun_events"


class Changed(msgspec.Struct, frozen=True):
    """``thread_id``'s log reaches at least ``last_seq``."""

    thread_id: str
    last_seq: int


def notify_sql(thread: str, last: str) -> str:
    """The ``pg_notify`` call for an append, given the SQL expressions of
    its thread id and its new last seq."""
    return f"pg_notify('{CHANNEL}', {thread} || ':' || ({last})::text)"


def parse(payload: str) -> Changed | None:
    """A notification's payload, or ``None`` for one kun did not send."""
    thread, _, seq = payload.rpartition(":")
    if not thread or not seq.isdecimal():
        return None
    return Changed(thread, int(seq))


class ChangeFeed:
    """The commits of every writer of the database, in commit order, from
    the moment :meth:`open` returns. Close it (``async with``) to stop."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn

    @classmethod
    async def open(cls, conn: AsyncConnection) -> ChangeFeed:
        await conn.execute(f"LISTEN {CHANNEL}")
        return cls(conn)

    async def __aiter__(self) -> AsyncIterator[Changed]:
        import psycopg

        try:
            async for note in self._conn.notifies():
                if note.channel == CHANNEL and (changed := parse(note.payload)) is not None:
                    yield changed
        except psycopg.OperationalError:
            return  # the connection is gone: the caller reads what it follows again

    async def aclose(self) -> None:
        await self._conn.close()

    async def __aenter__(self) -> ChangeFeed:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
