"""Side files (kun.store.blobs): stored once by hash, read back checked."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest

from kun.contracts.items import BlobRef
from kun.store.blobs import BlobAltered, BlobError, BlobMissing, BlobStore, blob_ref
from kun.store.jsonl import JsonlEventStore
from kun.store.memory import MemoryEventStore

if TYPE_CHECKING:
    from kun.store.postgres import PostgresEventStore

DATA = b"x" * 70_000 + "\u00e9 end".encode()


@pytest.fixture(params=["jsonl", "memory", "postgres"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    if request.param == "jsonl":
        yield JsonlEventStore(tmp_path / "home").blobs("thr_1")
    elif request.param == "memory":
        yield MemoryEventStore().blobs("thr_1")
    else:
        store = _postgres_store(request.getfixturevalue("postgres_url"))
        yield store.blobs("thr_1")
        anyio.run(store.aclose)


def _postgres_store(url: str) -> PostgresEventStore:
    from kun.store.postgres import PostgresEventStore  # psycopg: the url's fixture skips without

    return PostgresEventStore(url)


def test_put_then_get_round_trips_the_bytes(blobs: BlobStore) -> None:
    ref = blobs.put(DATA)
    assert ref == blob_ref(DATA)
    assert ref.size == len(DATA) and len(ref.sha256) == 64
    assert blobs.get(ref) == DATA


def test_the_side_file_sits_beside_the_log_named_by_its_hash(tmp_path: Path) -> None:
    store = JsonlEventStore(tmp_path / "home")
    ref = store.blobs("thr_1").put(DATA)
    path = tmp_path / "home" / "threads" / "thr_1" / "blobs" / ref.sha256
    assert path.read_bytes() == DATA
    assert os.listdir(path.parent) == [ref.sha256]


def test_the_same_content_is_stored_once(tmp_path: Path) -> None:
    blobs = JsonlEventStore(tmp_path / "home").blobs("thr_1")
    first = blobs.put(DATA)
    path = Path(blobs.where(first))
    before = path.stat()
    assert blobs.put(bytes(DATA)) == first
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    blobs.put(b"other")
    assert len(os.listdir(path.parent)) == 2


def test_a_damaged_copy_is_replaced_by_put(tmp_path: Path) -> None:
    blobs = JsonlEventStore(tmp_path / "home").blobs("thr_1")
    ref = blobs.put(DATA)
    Path(blobs.where(ref)).write_bytes(b"y" * len(DATA))
    assert blobs.put(DATA) == ref
    assert blobs.get(ref) == DATA


def test_a_missing_side_file_is_an_error_naming_it(blobs: BlobStore) -> None:
    ref = blob_ref(b"never stored")
    with pytest.raises(BlobMissing) as raised:
        blobs.get(ref)
    assert raised.value.where == blobs.where(ref)
    assert blobs.where(ref) in str(raised.value) and "thr_1" in str(raised.value)
    assert ref.sha256 in blobs.where(ref)


@pytest.mark.parametrize("altered", [b"z" * len(DATA), DATA[:-1], DATA + b"!"])
def test_an_altered_side_file_is_an_error_naming_it(tmp_path: Path, altered: bytes) -> None:
    blobs = JsonlEventStore(tmp_path / "home").blobs("thr_1")
    ref = blobs.put(DATA)
    Path(blobs.where(ref)).write_bytes(altered)
    with pytest.raises(BlobAltered, match="altered") as raised:
        blobs.get(ref)
    assert blobs.where(ref) in str(raised.value)


@pytest.mark.parametrize("altered", [b"z" * len(DATA), DATA[:-1], DATA + b"!"])
def test_an_altered_database_side_file_is_an_error(postgres_url: str, altered: bytes) -> None:
    import psycopg

    store = _postgres_store(postgres_url)
    blobs = store.blobs("thr_1")
    ref = blobs.put(DATA)
    with psycopg.connect(postgres_url, autocommit=True) as sql:
        sql.execute("UPDATE blobs SET data = %s WHERE sha256 = %s", [altered, ref.sha256])
    with pytest.raises(BlobAltered, match="altered") as raised:
        blobs.get(ref)
    assert blobs.where(ref) in str(raised.value) and ref.sha256 in blobs.where(ref)
    anyio.run(store.aclose)


def test_database_side_files_are_stored_once_for_every_thread(postgres_url: str) -> None:
    import psycopg

    store = _postgres_store(postgres_url)
    refs = {store.blobs(thread).put(DATA) for thread in ("thr_1", "thr_2", "thr_1")}
    assert refs == {blob_ref(DATA)}
    assert store.blobs("thr_3").get(blob_ref(DATA)) == DATA
    with psycopg.connect(postgres_url) as sql:
        assert sql.execute("SELECT count(*) FROM blobs").fetchone() == (1,)
    anyio.run(store.aclose)


def test_an_altered_memory_side_file_is_an_error() -> None:
    store = MemoryEventStore().blobs("thr_1")
    ref = store.put(DATA)
    store.blobs[ref.sha256] = b"z" * len(DATA)
    with pytest.raises(BlobAltered):
        store.get(ref)


@pytest.mark.parametrize("name", ["../../etc/passwd", "A" * 64, "0" * 63, ""])
def test_a_reference_that_is_no_hash_never_becomes_a_path(blobs: BlobStore, name: str) -> None:
    with pytest.raises(BlobAltered, match="not a SHA-256"):
        blobs.get(BlobRef(sha256=name, size=1))


def test_no_temporary_file_is_left_behind(tmp_path: Path) -> None:
    blobs = JsonlEventStore(tmp_path / "home").blobs("thr_1")
    for n in range(5):
        blobs.put(bytes([n]) * 1000)
    names = os.listdir(Path(blobs.where(blob_ref(b""))).parent)
    assert len(names) == 5 and not [n for n in names if n.startswith(".")]


def test_errors_are_runtime_failures_with_the_facts() -> None:
    ref = blob_ref(b"a")
    error = BlobMissing("thr_1", "/x/blobs/" + ref.sha256, ref, "missing")
    assert isinstance(error, BlobError)
    assert (error.thread_id, error.ref, error.reason) == ("thr_1", ref, "missing")
