"""The PostgreSQL store's schema, its version, and how it names the database.

Tables (version 2)::

    kun_schema (version)                              one row: the schema's version
    threads (thread_id, created_at, updated_at, last_seq, writer_pid, writer_since)
                                                      one row per thread: what it
                                                      is listed by, the seq the
                                                      next append must expect, and
                                                      the session of the worker
                                                      writing it now, if any
    events  (thread_id, seq, kind, at, line)          one row per event, keyed
                                                      (thread_id, seq); ``line``
                                                      is the event as the JSONL
                                                      store writes it, without
                                                      its newline
    blobs   (sha256, data)                            side files, content-addressed
    control (id, thread_id, kind, body, reply, created_at)
                                                      a request for the worker that
                                                      writes a thread, and its reply
                                                      (:mod:`kun.store.pg_control`)
    workers (pid, since, host, roots, joined_at)      the serving workers, by the
                                                      session that holds their
                                                      locks; ``roots``: the
                                                      workspaces they can reach
    waiting (thread_id, workspace, since)             threads with queued turns
                                                      and no writer, for a worker
                                                      that serves the workspace
                                                      to claim (:mod:`kun.store.pg_cluster`)

kun creates the schema, in one transaction, the first time a store opens a
database, and checks its version every time: a version above
:data:`SCHEMA_VERSION` (a newer kun created or migrated it) is refused with
``SchemaTooNew`` rather than misread; a lower one is migrated here, in the
same transaction (version 1 to 2 adds the writer columns and the two
cluster tables). Concurrent openers serialize on a
transaction-level advisory lock, so two workers starting at once do not both
create the tables.

The URL a store is given may hold a password: :class:`Target` keeps it for
connecting and hands out only :attr:`Target.where` (the URL without it) and
:meth:`Target.scrub` for messages that came from the driver.
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow

from kun.store.errors import SchemaTooNew, StoreUnavailable

__all__ = ["SCHEMA_VERSION", "Target", "advisory_key", "check_schema", "check_schema_sync"]

SCHEMA_VERSION = 2

_SCHEMA_LOCK = "kun schema"
_CREATE = (
    "CREATE TABLE IF NOT EXISTS kun_schema (version integer NOT NULL)",
    """CREATE TABLE IF NOT EXISTS threads (
        thread_id text PRIMARY KEY,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        last_seq bigint NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS events (
        thread_id text NOT NULL REFERENCES threads (thread_id),
        seq bigint NOT NULL,
        kind text NOT NULL,
        at bigint NOT NULL,
        line bytea NOT NULL,
        PRIMARY KEY (thread_id, seq)
    )""",
    "CREATE TABLE IF NOT EXISTS blobs (sha256 text PRIMARY KEY, data bytea NOT NULL)",
    """CREATE TABLE IF NOT EXISTS control (
        id bigserial PRIMARY KEY,
        thread_id text NOT NULL,
        kind text NOT NULL,
        body bytea NOT NULL,
        reply bytea,
        created_at bigint NOT NULL
    )""",
    *(
        # version 2
        "ALTER TABLE threads ADD COLUMN IF NOT EXISTS writer_pid integer",
        "ALTER TABLE threads ADD COLUMN IF NOT EXISTS writer_since timestamptz",
        """CREATE TABLE IF NOT EXISTS workers (
            pid integer NOT NULL,
            since timestamptz NOT NULL,
            host text NOT NULL,
            roots text[] NOT NULL,
            joined_at bigint NOT NULL,
            PRIMARY KEY (pid, since)
        )""",
        """CREATE TABLE IF NOT EXISTS waiting (
            thread_id text PRIMARY KEY,
            workspace text,
            since bigint NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS threads_writer ON threads (writer_pid)"
        " WHERE writer_pid IS NOT NULL",
    ),
)
_LOCK = "SELECT pg_advisory_xact_lock(%s)"
_EXISTS = "SELECT to_regclass('kun_schema') IS NOT NULL"
_VERSION = "SELECT max(version) FROM kun_schema"
_STAMP = "INSERT INTO kun_schema (version) VALUES (%s)"
_RESTAMP = "UPDATE kun_schema SET version = %s"


def advisory_key(name: str) -> int:
    """A 64-bit advisory lock key for ``name`` (a hash, so other
    applications' keys on the same database are unlikely to collide)."""
    digest = hashlib.blake2b(name.encode(), digest_size=8, person=b"kun-lock").digest()
    return int.from_bytes(digest, "big", signed=True)


class Target:
    """The database a store connects to: the connection string, kept
    private, and how to name it without its password."""

    __slots__ = ("_secrets", "conninfo", "where")

    def __init__(self, conninfo: str) -> None:
        try:
            params = conninfo_to_dict(conninfo)
        except psycopg.Error:
            raise StoreUnavailable(
                "PostgreSQL", "the URL is not a valid PostgreSQL connection string"
            ) from None
        self.conninfo = conninfo
        password = str(params.get("password") or "")
        self._secrets = [s for s in {password, quote(password, safe="")} if s]
        user = params.get("user")
        host = params.get("host") or "localhost"
        port = params.get("port")
        where = f"postgresql://{f'{user}@' if user else ''}{host}"
        where += f":{port}" if port else ""
        self.where = f"{where}/{params.get('dbname') or ''}"

    def scrub(self, text: str) -> str:
        """``text`` with the password, if any, masked."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def reason(self, exc: psycopg.Error) -> str:
        """What a driver's error says, on one line, the password masked."""
        return self.scrub(" ".join(str(exc).split()) or type(exc).__name__)

    def unavailable(self, exc: psycopg.Error) -> StoreUnavailable:
        """The store's error for a driver's one (not chained to it: a
        driver's message may echo connection parameters)."""
        return StoreUnavailable(self.where, self.reason(exc), exc.sqlstate)

    def __repr__(self) -> str:
        return f"Target({self.where!r})"


async def check_schema(conn: psycopg.AsyncConnection[TupleRow], where: str) -> None:
    """Create the schema if the database has none; refuse a newer one."""
    async with conn.transaction():
        await conn.execute(_LOCK, [advisory_key(_SCHEMA_LOCK)])
        exists = await (await conn.execute(_EXISTS)).fetchone()
        row = None
        if exists is not None and exists[0]:
            row = await (await conn.execute(_VERSION)).fetchone()
            if _current(row, where):
                return
        for statement in _CREATE:
            await conn.execute(statement)
        await conn.execute(_stamp(row), [SCHEMA_VERSION])


def check_schema_sync(conn: psycopg.Connection[TupleRow], where: str) -> None:
    """:func:`check_schema` on a blocking connection."""
    with conn.transaction():
        conn.execute(_LOCK, [advisory_key(_SCHEMA_LOCK)])
        exists = conn.execute(_EXISTS).fetchone()
        row = None
        if exists is not None and exists[0]:
            row = conn.execute(_VERSION).fetchone()
            if _current(row, where):
                return
        for statement in _CREATE:
            conn.execute(statement)
        conn.execute(_stamp(row), [SCHEMA_VERSION])


def _current(row: TupleRow | None, where: str) -> bool:
    """Whether the version read (``None`` in the row: not stamped yet) is
    usable as it is; ``SchemaTooNew`` for one this kun does not know. An
    older one is not: the statements, all idempotent, bring it up to date."""
    found = None if row is None else row[0]
    if found is None:
        return False
    if found > SCHEMA_VERSION:
        raise SchemaTooNew(where, found, SCHEMA_VERSION)
    return bool(found == SCHEMA_VERSION)


def _stamp(row: TupleRow | None) -> str:
    """Stamp a new schema (``row``: no version read, or none stamped), or
    restamp one migrated from an older version."""
    return _STAMP if row is None or row[0] is None else _RESTAMP
