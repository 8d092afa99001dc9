"""The workers sharing one database: a writer that dies leaves its threads
orphaned for the others to see (and only then), serving workers are listed
with their roots while they live, and a waiting thread is claimed exactly
once, only by a worker whose roots hold its workspace."""

from __future__ import annotations

import anyio
import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kun.store import PostgresEventStore
from kun.store.pg_cluster import covers
from kun.store.pg_schema import SCHEMA_VERSION
from tests.store.factories import TID, warning

pytestmark = pytest.mark.anyio

OTHER = "thr_other0000000000000000001"


def _kill_session(url: str, pid: int) -> None:
    """End the database session a store's locks live on, as the server
    does when a SIGKILLed worker's socket closes."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", [pid])


async def test_a_thread_is_orphaned_only_once_its_writer_is_gone(postgres_url: str) -> None:
    async with PostgresEventStore(postgres_url) as survivor:
        writer = PostgresEventStore(postgres_url)
        await writer.append(TID, [warning(1)], expected_seq=0)
        await survivor.append(OTHER, [warning(1, OTHER)], expected_seq=0)
        pid, _ = await writer.session()
        assert await survivor.cluster().orphaned() == []
        _kill_session(postgres_url, pid)
        with anyio.fail_after(10):
            while await survivor.cluster().orphaned() != [TID]:  # noqa: ASYNC110 (the server)
                await anyio.sleep(0.05)
        assert await survivor.try_claim(TID)
        assert await survivor.cluster().orphaned() == []
        await survivor.release(TID)
        assert await survivor.cluster().orphaned() == []
        await writer.aclose()


async def test_a_released_thread_is_not_orphaned(postgres_url: str) -> None:
    async with (
        PostgresEventStore(postgres_url) as writer,
        PostgresEventStore(postgres_url) as other,
    ):
        await writer.append(TID, [warning(1)], expected_seq=0)
        await writer.release(TID)
        await writer.aclose()
        assert await other.cluster().orphaned() == []


async def test_serving_workers_are_listed_while_they_live(postgres_url: str) -> None:
    async with PostgresEventStore(postgres_url) as reader:
        one = PostgresEventStore(postgres_url)
        await one.cluster().join(["/srv/a", "/srv/b"])
        two = PostgresEventStore(postgres_url)
        await two.cluster().join(["/"])
        workers = await reader.cluster().workers()
        assert [w.roots for w in workers] == [("/srv/a", "/srv/b"), ("/",)]
        assert workers[0].serves("/srv/a/x") and not workers[0].serves("/srv/ab")
        await two.cluster().leave()
        assert [w.roots for w in await reader.cluster().workers()] == [("/srv/a", "/srv/b")]
        await two.aclose()
        await one.aclose()  # its session ends (the server sees it a moment later)
        with anyio.fail_after(10):
            while await reader.cluster().workers():  # noqa: ASYNC110 (the server)
                await anyio.sleep(0.02)


async def test_a_waiting_thread_is_claimed_once_by_a_worker_that_serves_it(
    postgres_url: str,
) -> None:
    async with (
        PostgresEventStore(postgres_url) as elsewhere,
        PostgresEventStore(postgres_url) as a,
        PostgresEventStore(postgres_url) as b,
    ):
        await elsewhere.cluster().wait(TID, "/srv/a/project")
        await elsewhere.cluster().wait(TID, "/srv/a/project")  # once
        await elsewhere.cluster().wait(OTHER, None)
        assert await elsewhere.cluster().claim_waiting(["/srv/b"]) == [OTHER]
        assert b.holds(OTHER) is False and elsewhere.holds(OTHER)
        results = await _race(a, b, ["/srv/a"])
        assert sorted(results) == [[], [TID]]
        assert not await a.cluster().waiting(TID)


async def _race(a: PostgresEventStore, b: PostgresEventStore, roots: list[str]) -> list[list[str]]:
    results: list[list[str]] = []

    async def claim(store: PostgresEventStore) -> None:
        results.append(await store.cluster().claim_waiting(roots))

    async with anyio.create_task_group() as tg:
        tg.start_soon(claim, a)
        tg.start_soon(claim, b)
    return results


async def test_a_waiting_thread_another_writer_holds_stays_waiting(postgres_url: str) -> None:
    async with PostgresEventStore(postgres_url) as writer, PostgresEventStore(postgres_url) as b:
        await writer.claim(TID)
        await writer.cluster().wait(TID, None)
        assert await b.cluster().claim_waiting(["/"]) == []
        assert await b.cluster().waiting(TID)
        await writer.release(TID)
        assert await b.cluster().claim_waiting(["/"]) == [TID]


async def test_a_version_1_schema_is_migrated(postgres_url: str) -> None:
    async with PostgresEventStore(postgres_url) as store:
        await store.append(TID, [warning(1)], expected_seq=0)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE workers")
        conn.execute("DROP TABLE waiting")
        conn.execute("ALTER TABLE threads DROP COLUMN writer_pid, DROP COLUMN writer_since")
        conn.execute("UPDATE kun_schema SET version = 1")
    async with PostgresEventStore(postgres_url) as store:
        assert [e.seq for e in store.read(TID)] == [1]
        await store.cluster().wait(OTHER, None)
        assert await store.cluster().orphaned() == []
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM kun_schema").fetchall() == [(SCHEMA_VERSION,)]


_path = st.lists(st.sampled_from(["a", "b", "ab"]), min_size=1, max_size=3).map(
    lambda parts: "/" + "/".join(parts)
)


@given(roots=st.lists(_path | st.just("/"), max_size=3), workspace=_path | st.none())
def test_covers_is_the_path_prefix_rule(roots: list[str], workspace: str | None) -> None:
    expected = workspace is None or any(
        r == "/" or workspace.split("/")[: len(r.split("/"))] == r.split("/") for r in roots
    )
    assert covers(roots, workspace) == expected
