"""How the PostgreSQL store reaches its database: two pools, opened on first
use, and the translation of the driver's errors.

The async methods of the store share one pool; the blocking ones (``read``,
``exists``, ``list_threads``, side files) another, since the port makes
them synchronous and side files are used from worker threads. Whichever
opens first creates or checks the schema
(:func:`kun.store.pg_schema.check_schema`). Once closed, each use gets a
connection of its own, so a closed store still reads.

Every ``psycopg.Error`` leaving a block becomes ``StoreUnavailable``, its
message on one line with the password masked (:class:`Target`).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from kun.store.pg_schema import Target, check_schema, check_schema_sync

__all__ = ["AsyncConnection", "Connection", "Connections"]

AsyncConnection = psycopg.AsyncConnection[TupleRow]
Connection = psycopg.Connection[TupleRow]


class Connections:
    """The pools of one store. ``max_connections`` bounds each; ``timeout``
    is how long to wait for a pooled connection."""

    def __init__(self, target: Target, max_connections: int, timeout: float) -> None:
        self.target = target
        self._max_connections = max_connections
        self._timeout = timeout
        self._schema_checked = False
        self._closed = False
        self._pool: AsyncConnectionPool[AsyncConnection] | None = None
        self._opening = anyio.Lock()
        self._sync_pool: ConnectionPool[Connection] | None = None
        self._sync_opening = threading.Lock()

    async def open(self) -> None:
        """Open the async pool now (the schema checked first)."""
        await self._async_pool()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection]:
        """A pooled connection (autocommit), or once closed one of its own."""
        pool = await self._async_pool()
        with self.translated():
            if pool is not None:
                async with pool.connection() as conn:
                    yield conn
            else:
                async with await self.connect() as conn:
                    if not self._schema_checked:
                        await check_schema(conn, self.target.where)
                    yield conn

    @contextmanager
    def sync_connection(self) -> Iterator[Connection]:
        """A blocking pooled connection, or once closed one of its own."""
        with self.translated():
            pool = self._sync_pool_opened()
            if pool is not None:
                with pool.connection() as conn:
                    yield conn
            else:
                with psycopg.connect(self.target.conninfo, autocommit=True) as conn:
                    if not self._schema_checked:
                        check_schema_sync(conn, self.target.where)
                    yield conn

    async def connect(self, application_name: str = "") -> AsyncConnection:
        """A connection outside the pools (autocommit), for the caller to
        close; driver errors are not translated."""
        conninfo = self.target.conninfo
        if application_name:
            conninfo = make_conninfo(conninfo, application_name=application_name)
        return await psycopg.AsyncConnection.connect(conninfo, autocommit=True)

    @contextmanager
    def translated(self) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            raise self.target.unavailable(exc) from None

    async def aclose(self) -> None:
        """Close both pools; later uses get connections of their own."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
        with self._sync_opening:
            sync_pool, self._sync_pool = self._sync_pool, None
        if sync_pool is not None:
            sync_pool.close()

    async def _async_pool(self) -> AsyncConnectionPool[AsyncConnection] | None:
        if self._pool is not None or self._closed:
            return self._pool
        async with self._opening:
            if self._pool is None and not self._closed:
                with self.translated():
                    if not self._schema_checked:
                        async with await self.connect() as conn:
                            await check_schema(conn, self.target.where)
                        self._schema_checked = True
                    pool = AsyncConnectionPool(
                        self.target.conninfo,
                        min_size=1,
                        max_size=self._max_connections,
                        open=False,
                        kwargs={"autocommit": True},
                        timeout=self._timeout,
                        name="kun-events",
                    )
                    await pool.open()
                    self._pool = pool
        return self._pool

    def _sync_pool_opened(self) -> ConnectionPool[Connection] | None:
        """The blocking pool, as :meth:`_async_pool`; safe from any thread."""
        if self._sync_pool is not None or self._closed:
            return self._sync_pool
        with self._sync_opening:
            if self._sync_pool is None and not self._closed:
                if not self._schema_checked:
                    with psycopg.connect(self.target.conninfo, autocommit=True) as conn:
                        check_schema_sync(conn, self.target.where)
                    self._schema_checked = True
                pool = ConnectionPool(
                    self.target.conninfo,
                    min_size=1,
                    max_size=self._max_connections,
                    open=False,
                    kwargs={"autocommit": True},
                    timeout=self._timeout,
                    name="kun-reads",
                )
                pool.open()
                self._sync_pool = pool
        return self._sync_pool
