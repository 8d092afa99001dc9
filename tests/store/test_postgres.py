"""What only the PostgreSQL store has: connections to one database from many
stores, its schema and its version, the password in its URL, the rows it
writes. (The port's contract runs on it in ``test_contract.py``.)"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import anyio
import psycopg
import pytest

from kun.store import (
    CorruptLog,
    PostgresEventStore,
    ReadReport,
    SchemaTooNew,
    SeqConflict,
    StoreUnavailable,
    ThreadLocked,
    UnknownEventKind,
)
from kun.store.codec import encode_line
from kun.store.pg_schema import SCHEMA_VERSION
from tests.pg_server import PgServer
from tests.store.factories import TID, delta, warning, warnings

pytestmark = pytest.mark.anyio

PASSWORD = "Sup3r-s3cret-pw"


@pytest.fixture
def sql(postgres_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A plain connection to the test's database, to look at (or damage)
    what the store wrote."""
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        yield conn


def _with_password(url: str) -> str:
    return url.replace("postgresql://kun@", f"postgresql://kun:{PASSWORD}@", 1)


def _everything_said(exc: BaseException) -> str:
    """The error as a traceback prints it, chained errors included."""
    return "".join(traceback.format_exception(exc))


async def _append_one(
    store: PostgresEventStore, seq: int, outcomes: list[SeqConflict | None]
) -> None:
    """Append one event at ``seq``; record ``None`` if it went in, else the
    conflict."""
    try:
        await store.append(TID, [warning(seq)], expected_seq=seq - 1)
        outcomes.append(None)
    except SeqConflict as exc:
        outcomes.append(exc)


async def test_two_connections_racing_at_one_seq_one_wins(
    postgres_url: str, sql: psycopg.Connection[tuple[object, ...]]
) -> None:
    """The advisory lock only says who should write; the log stays whole
    when two stores write at once anyway (here: the first lost its lock
    connection, as across a network partition, and does not know)."""
    first, second = PostgresEventStore(postgres_url), PostgresEventStore(postgres_url)
    async with first, second:
        await first.append(TID, warnings(1, 1), expected_seq=0)
        sql.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory'"
            " AND granted AND database = (SELECT oid FROM pg_database"
            " WHERE datname = current_database())"
        )
        assert await second.claim(TID) == 1
        rounds = 20
        for _ in range(rounds):
            last = await second.last_seq(TID)
            outcomes: list[SeqConflict | None] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(_append_one, first, last + 1, outcomes)
                tg.start_soon(_append_one, second, last + 1, outcomes)
            conflicts = [(c.expected, c.actual) for c in outcomes if c is not None]
            assert len(outcomes) == 2 and conflicts == [(last, last + 1)]
        assert [e.seq for e in second.read(TID)] == list(range(1, rounds + 2))


async def test_the_primary_key_refuses_a_seq_that_has_a_row(
    postgres_url: str, sql: psycopg.Connection[tuple[object, ...]]
) -> None:
    async with PostgresEventStore(postgres_url) as store:
        await store.append(TID, warnings(1, 2), expected_seq=0)
        line = encode_line(warning(3, message="around"))[:-1]
        sql.execute(
            "INSERT INTO events (thread_id, seq, kind, at, line) VALUES (%s, 3, 'warning', 0, %s)",
            [TID, line],
        )
        with pytest.raises(SeqConflict) as caught:
            await store.append(TID, [warning(3)], expected_seq=2)
        assert (caught.value.expected, caught.value.actual) == (2, 3)
        assert [e.message for e in store.read(TID)] == ["m", "m", "around"]  # type: ignore[union-attr]


async def test_an_event_is_stored_as_its_jsonl_line(
    postgres_url: str, sql: psycopg.Connection[tuple[object, ...]]
) -> None:
    async with PostgresEventStore(postgres_url) as store:
        events = [warning(1), delta(2)]
        await store.append(TID, events, expected_seq=0)
        rows = sql.execute(
            "SELECT thread_id, seq, kind, at, line FROM events ORDER BY seq"
        ).fetchall()
        assert rows == [
            (TID, e.seq, kind, e.at, encode_line(e)[:-1])
            for e, kind in zip(events, ["warning", "assistant_text_delta"], strict=True)
        ]
        summary = sql.execute("SELECT thread_id, updated_at, last_seq FROM threads").fetchall()
        assert summary == [(TID, events[-1].at, 2)]


async def test_rows_kun_cannot_read_are_met_as_in_a_jsonl_log(
    postgres_url: str, sql: psycopg.Connection[tuple[object, ...]]
) -> None:
    async with PostgresEventStore(postgres_url) as store:
        await store.append(TID, warnings(1, 4), expected_seq=0)
        sql.execute(
            "UPDATE events SET line = %s WHERE seq = 2",
            [b'{"kind":"from_the_future","seq":2,"at":5}'],
        )
        sql.execute("UPDATE events SET line = %s WHERE seq = 3", [b'{"kind":"warning", broken'])

        with pytest.raises(UnknownEventKind, match="from_the_future") as unknown:
            list(store.read(TID))
        assert (unknown.value.line, unknown.value.last_good_seq) == (2, 1)
        assert f"thread {TID}" in str(unknown.value.path)

        with pytest.raises(CorruptLog, match="line 3") as bad:
            list(store.read(TID, mode="tolerant"))
        assert bad.value.last_good_seq == 1

        report = ReadReport()
        assert [e.seq for e in store.read(TID, mode="skip_bad", report=report)] == [1, 4]
        assert report.unknown_kinds == {"from_the_future": 1}
        assert (report.skipped_bad, report.events, report.last_seq) == (1, 2, 4)


async def test_a_missing_row_is_a_gap(
    postgres_url: str, sql: psycopg.Connection[tuple[object, ...]]
) -> None:
    async with PostgresEventStore(postgres_url) as store:
        await store.append(TID, warnings(1, 5), expected_seq=0)
        sql.execute("DELETE FROM events WHERE seq IN (2, 3)")
        with pytest.raises(CorruptLog, match=r"seq jumps from 1 to 4: seqs 2\.\.3 missing"):
            list(store.read(TID))
        report = ReadReport()
        assert [e.seq for e in store.read(TID, mode="tolerant", report=report)] == [1, 4, 5]
        assert (report.seq_gaps, report.missing_seqs, report.first_gap) == (1, 2, (1, 4))


async def test_a_page_larger_than_one_query_reads_whole(postgres_url: str) -> None:
    async with PostgresEventStore(postgres_url) as store:
        await store.append(TID, warnings(1, 600), expected_seq=0)
        assert [e.seq for e in store.read(TID)] == list(range(1, 601))
        assert [e.seq for e in store.read(TID, after=250, limit=300)] == list(range(251, 551))
        assert [e.seq for e in store.read(TID, after=590, until=595)] == list(range(591, 596))


async def test_the_holder_of_a_thread_is_named(postgres_url: str) -> None:
    async with (
        PostgresEventStore(postgres_url) as first,
        PostgresEventStore(postgres_url) as second,
    ):
        await first.claim(TID)
        assert first.holds(TID)
        with pytest.raises(ThreadLocked) as caught:
            await second.claim(TID)
        assert caught.value.holder_pid == os.getpid()
        assert f"advisory lock in {second.where}" in str(caught.value)
        assert not second.holds(TID)


async def test_stores_opening_an_empty_database_at_once_create_the_schema_once(
    postgres_url: str, sql: psycopg.Connection[tuple[object, ...]]
) -> None:
    stores = [PostgresEventStore(postgres_url) for _ in range(4)]
    async with anyio.create_task_group() as tg:
        for store in stores:
            tg.start_soon(store.__aenter__)
    for store in stores:
        await store.aclose()
    assert sql.execute("SELECT version FROM kun_schema").fetchall() == [(SCHEMA_VERSION,)]


async def test_a_newer_schema_is_refused_naming_both_versions(
    postgres_url: str, sql: psycopg.Connection[tuple[object, ...]]
) -> None:
    async with PostgresEventStore(postgres_url) as store:
        await store.append(TID, warnings(1, 1), expected_seq=0)
    sql.execute("UPDATE kun_schema SET version = %s", [SCHEMA_VERSION + 1])

    newer = PostgresEventStore(_with_password(postgres_url))
    with pytest.raises(SchemaTooNew) as caught:
        await newer.__aenter__()
    message = str(caught.value)
    assert (caught.value.found, caught.value.known) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
    assert f"version {SCHEMA_VERSION + 1}" in message and f"version {SCHEMA_VERSION}" in message
    assert "\n" not in message
    assert PASSWORD not in _everything_said(caught.value)
    with pytest.raises(SchemaTooNew):
        PostgresEventStore(postgres_url).exists(TID)
    await newer.aclose()
    assert isinstance(caught.value, StoreUnavailable)


async def test_a_password_never_shows(
    postgres_server: PgServer, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    failures: list[BaseException] = []
    urls = [
        _with_password(postgres_server.database_url("no_such_database")),
        f"postgresql://kun:{PASSWORD}@127.0.0.1:1/db",
        f"host=127.0.0.1 port={postgres_server.port} user=kun password={PASSWORD} dbname=nope",
        f"postgresql://kun:{PASSWORD}@[bad/db",
    ]
    for url in urls:
        with pytest.raises(StoreUnavailable) as caught:
            async with PostgresEventStore(url) as store:
                pass
        failures.append(caught.value)
    with pytest.raises(StoreUnavailable) as caught:
        PostgresEventStore(urls[0]).list_threads()
    failures.append(caught.value)

    async with PostgresEventStore(_with_password(postgres_url)) as store:
        async with PostgresEventStore(_with_password(postgres_url)) as other:
            await store.claim(TID)
            with pytest.raises(ThreadLocked) as locked:
                await other.append(TID, [warning(1)], expected_seq=0)
            failures.append(locked.value)
        said = [repr(store), store.where, store.blobs(TID).where(store.blobs(TID).put(b"x"))]

    assert "no_such_database" in str(failures[0])
    assert "kun@127.0.0.1" in str(failures[0])
    for failure in failures:
        said.append(_everything_said(failure))
    for text in [*said, caplog.text]:
        assert PASSWORD not in text


GOLDEN = Path(__file__).resolve().parents[2] / "events" / "golden" / "aborted_turn.events.jsonl"


@pytest.mark.parametrize("argv", [["--help"], ["replay", str(GOLDEN)]], ids=["help", "replay"])
def test_kun_store_and_the_cli_do_not_load_psycopg(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "import kun.store, kun.store.jsonl\n"
        "from kun.entry import main\n"
        f"sys.argv = ['kun', *{argv!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('psycopg', 'psycopg_pool')]\n"
        "print('loaded:', loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "loaded: []"


async def test_lines_are_the_rows_as_written_and_discard_takes_the_thread_back(
    postgres_url: str, sql: psycopg.Connection[tuple[object, ...]]
) -> None:
    events = warnings(1, 300)
    async with PostgresEventStore(postgres_url) as store:
        await store.append(TID, events, expected_seq=0)
        store.blobs(TID).put(b"side")
        assert list(store.lines(TID)) == [encode_line(e) for e in events]
        assert list(store.lines(TID, after=299)) == [encode_line(events[-1])]
        async with PostgresEventStore(postgres_url) as other:
            with pytest.raises(ThreadLocked):
                await other.discard(TID)
        await store.discard(TID)
        assert not store.exists(TID) and TID not in store.list_threads()
        assert not store.holds(TID)
    assert sql.execute("SELECT count(*) FROM events").fetchone() == (0,)
    assert sql.execute("SELECT count(*) FROM blobs").fetchone() == (1,)
