"""``kun migrate`` against a real PostgreSQL server: a round trip home ->
database -> home that replays the same, a thread already there, one
continued, one refused (and replaced), a copy failing half way taken
back, and a thread a live writer holds refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from kun.app import migrate as migrating
from kun.contracts import events as ev
from kun.contracts.items import BlobRef, ToolResult
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState
from kun.store.blobs import blob_ref
from kun.store.errors import LogWriteFailed
from kun.store.jsonl import JsonlEventStore
from kun.store.postgres import PostgresEventStore
from kun.testing.logbuilder import LogBuilder
from tests.cli_support import invoked

pytestmark = pytest.mark.anyio

SIDE = b"a tool's output too big for a log line\n" * 100
TID = "thr_migrate_one"


def _events(thread_id: str, turns: int = 2, answer: str = "answer") -> list[ev.Event]:
    b = LogBuilder(thread_id)
    b.create(workspace="/w", title="moved", provider="p", model="m")
    for n in range(turns):
        b.start_turn(f"prompt {n}")
        call = b.tool_call("bash", {"command": "ls"})
        b.start_tool(call)
        b.finish_tool(call, "head of it")
        b.item(_big_result(b, call.call_id))
        b.assistant_text([f"{answer} {n}"])
        b.usage(prompt_tokens=100 + n, completion_tokens=7, cost_usd=0.01)
        b.complete()
    return b.events


def _big_result(b: LogBuilder, call_id: str) -> ToolResult:
    ref = blob_ref(SIDE)
    return ToolResult(
        id=b.next_id("res"), call_id=call_id, name="bash", output="head", output_ref=ref
    )


def _write(home: Path, events: list[ev.Event], *, side: bool = True) -> None:
    folder = home / "threads" / events[0].thread_id
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "events.jsonl").open("ab") as log:
        log.writelines(msgspec.json.encode(e) + b"\n" for e in events)
    if side:
        (folder / "blobs").mkdir(exist_ok=True)
        (folder / "blobs" / blob_ref(SIDE).sha256).write_bytes(SIDE)


def _projection(events: Iterator[ev.Event]) -> ThreadState:
    projector = Projector()
    projector.apply_all(events)
    return projector.snapshot()


async def _migrate(*args: str) -> tuple[int, str, str]:
    result = await invoked(["migrate", *args])
    return result.exit_code, result.stdout, result.stderr


async def _in_database(url: str, thread_id: str) -> tuple[ThreadState, bytes] | None:
    async with PostgresEventStore(url) as store:
        if not store.exists(thread_id):
            return None
        return _projection(store.read(thread_id)), store.blobs(thread_id).get(_ref())


def _ref() -> BlobRef:
    return blob_ref(SIDE)


def _home_projection(home: Path, thread_id: str) -> ThreadState:
    return _projection(JsonlEventStore(home).read(thread_id))


async def test_a_round_trip_home_database_home_replays_the_same(
    tmp_path: Path, postgres_url: str
) -> None:
    first, back = tmp_path / "first", tmp_path / "back"
    _write(first, _events(TID))
    _write(first, _events("thr_migrate_two", turns=1))

    code, out, err = await _migrate("--to", postgres_url, "--home", str(first))
    assert code == 0, err
    assert f"{TID}: copied (" in out and "1 side file" in out
    assert "2 threads from" in out and "2 copied" in out

    held = await _in_database(postgres_url, TID)
    assert held is not None
    state, side = held
    assert state == _home_projection(first, TID)
    assert state.usage.calls == 2 and state.usage.prompt_tokens == 201
    assert side == SIDE

    code, out, err = await _migrate("--from", postgres_url, "--home", str(back))
    assert code == 0, err
    assert "2 copied" in out
    assert _home_projection(back, TID) == _home_projection(first, TID)
    assert (back / "threads" / TID / "blobs" / _ref().sha256).read_bytes() == SIDE


async def test_a_thread_already_there_is_left_and_a_prefix_is_continued(
    tmp_path: Path, postgres_url: str
) -> None:
    events = _events(TID, turns=3)
    cut = next(e.seq for e in events if isinstance(e, ev.TurnCompleted))
    _write(tmp_path, events[:cut])
    assert (await _migrate("--to", postgres_url, "--home", str(tmp_path)))[0] == 0

    code, out, _ = await _migrate("--to", postgres_url, "--home", str(tmp_path))
    assert code == 0
    assert f"{TID}: already there" in out and "1 already there" in out

    _write(tmp_path, events[cut:], side=False)
    code, out, err = await _migrate("--to", postgres_url, "--home", str(tmp_path), "--thread", TID)
    assert code == 0, err
    assert f"{TID}: continued ({len(events) - cut} events" in out
    held = await _in_database(postgres_url, TID)
    assert held is not None and held[0] == _home_projection(tmp_path, TID)


async def test_a_thread_the_target_holds_differently_is_refused_unless_replaced(
    tmp_path: Path, postgres_url: str
) -> None:
    other, mine = tmp_path / "other", tmp_path / "mine"
    _write(other, _events(TID, answer="theirs"))
    _write(mine, _events(TID, answer="mine"))
    assert (await _migrate("--to", postgres_url, "--home", str(other)))[0] == 0

    code, out, err = await _migrate("--to", postgres_url, "--home", str(mine))
    assert code == 1
    assert f"{TID}: refused: the target's event" in err and "--replace" in err
    assert "1 refused" in out
    held = await _in_database(postgres_url, TID)
    assert held is not None and held[0] == _home_projection(other, TID)

    code, out, err = await _migrate("--to", postgres_url, "--home", str(mine), "--replace")
    assert code == 0, err
    assert f"{TID}: replaced" in out
    held = await _in_database(postgres_url, TID)
    assert held is not None and held[0] == _home_projection(mine, TID)


async def test_a_copy_failing_half_way_is_taken_back(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tmp_path, _events(TID, turns=4))
    monkeypatch.setattr(migrating, "BATCH", 5)
    real = PostgresEventStore.append
    calls = 0

    async def failing(self: PostgresEventStore, *args: object, **kwargs: object) -> int:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise LogWriteFailed("the database", "connection lost")
        return await real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(PostgresEventStore, "append", failing)
    seen: list[migrating.Moved] = []
    tally = await migrating.migrate_home(tmp_path, postgres_url, said=seen.append)

    assert not tally.ok and calls == 3
    assert [(m.thread_id, m.outcome) for m in seen] == [(TID, "failed")]
    assert "connection lost" in seen[0].why
    assert await _in_database(postgres_url, TID) is None


async def test_a_thread_a_live_writer_holds_is_refused(tmp_path: Path, postgres_url: str) -> None:
    _write(tmp_path, _events(TID))
    _write(tmp_path, _events("thr_migrate_free", turns=1))
    async with JsonlEventStore(tmp_path) as writer:
        await writer.claim(TID)
        code, out, err = await _migrate("--to", postgres_url, "--home", str(tmp_path))
    assert code == 1
    assert err.count("\n") == 1 and err.startswith(f"{TID}: held: ")
    assert "1 copied, 1 held" in out or "1 held, 1 copied" in out
    assert await _in_database(postgres_url, TID) is None

    async with PostgresEventStore(postgres_url) as database:
        await database.claim(TID)
        code, _, err = await _migrate(
            "--to", postgres_url, "--home", str(tmp_path), "--thread", TID
        )
    assert code == 1
    assert err.startswith(f"{TID}: held: ") and err.count("\n") == 1


async def test_migrate_wants_one_database_url(tmp_path: Path) -> None:
    code, _, err = await _migrate("--home", str(tmp_path))
    assert code == 1 and "give one of --to URL and --from URL" in err
    code, _, err = await _migrate("--to", "/some/where", "--home", str(tmp_path))
    assert code == 1 and "expected a URL such as postgresql://" in err
