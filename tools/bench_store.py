"""Benchmark the event stores against each other: PostgreSQL / JSONL.

    python tools/bench_store.py [--durable 400] [--deltas 4000] [--replay 20000] [--runs 3]

Starts a throwaway PostgreSQL server (``tests/pg_server.py``: Debian's
``initdb`` + ``pg_ctl`` on a free loopback port, with fsync on, as a real
server runs) and prints, as ratios to the JSONL store measured in the same
run (these machines are noisy):

- durable appends: one event per append, each durable before it returns
  (a tool result, a turn's end): JSONL fsyncs the file, PostgreSQL commits;
- delta appends: one streamed text delta per append (group committed:
  JSONL fsyncs every 64 lines or 5 ms, PostgreSQL commits with
  ``synchronous_commit`` off);
- replay: reading a thread of ``--replay`` events from the start, decoded
  (what every projection rebuild does).

Each figure is the median of ``--runs`` rounds, PostgreSQL and JSONL run
back to back in each round. Needs ``pip install -e '.[postgres]'`` and
Debian's ``postgresql`` package.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kun.contracts import events as ev  # noqa: E402
from kun.store import JsonlEventStore  # noqa: E402
from kun.store.port import EventStore  # noqa: E402
from tests.pg_server import PgServer, start_server  # noqa: E402

AT = 1_700_000_000_000


def _warning(seq: int, thread: str) -> ev.Event:
    return ev.WarningEvent(seq=seq, at=AT + seq, thread_id=thread, code="bench", message="m" * 80)


def _delta(seq: int, thread: str) -> ev.Event:
    return ev.AssistantTextDelta(
        seq=seq, at=AT + seq, thread_id=thread, turn_id="turn_b", item_id="txt_b", text="word "
    )


async def _appends(
    store: EventStore, thread: str, n: int, make: Callable[[int, str], ev.Event]
) -> float:
    """Events per second, one per append, synced at the end."""
    await store.claim(thread)
    start = time.perf_counter()
    for seq in range(1, n + 1):
        await store.append(thread, [make(seq, thread)], expected_seq=seq - 1)
    await store.sync(thread)
    return n / (time.perf_counter() - start)


async def _filled(store: EventStore, thread: str, n: int) -> None:
    await store.claim(thread)
    batch = 500
    for first in range(1, n + 1, batch):
        events = [_warning(seq, thread) for seq in range(first, min(first + batch, n + 1))]
        await store.append(thread, events, expected_seq=first - 1)
    await store.sync(thread)


def _replay_rate(store: EventStore, thread: str, n: int) -> float:
    start = time.perf_counter()
    count = sum(1 for _ in store.read(thread))
    assert count == n, (count, n)
    return n / (time.perf_counter() - start)


class Stores:
    """A fresh JSONL home and a fresh PostgreSQL database per measurement."""

    def __init__(self, root: Path, server: PgServer) -> None:
        self.root = root
        self.server = server
        self.made = 0

    def jsonl(self) -> EventStore:
        self.made += 1
        return JsonlEventStore(self.root / f"home-{self.made}")

    def postgres(self) -> EventStore:
        import psycopg

        from kun.store.postgres import PostgresEventStore

        self.made += 1
        name = f"bench_{self.made}"
        with psycopg.connect(self.server.url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return PostgresEventStore(self.server.database_url(name))


async def _append_rate(
    open_store: Callable[[], EventStore], n: int, make: Callable[[int, str], ev.Event]
) -> float:
    async with open_store() as store:
        return await _appends(store, "thr_bench", n, make)


async def _replay(open_store: Callable[[], EventStore], n: int) -> float:
    async with open_store() as store:
        await _filled(store, "thr_bench", n)
        _replay_rate(store, "thr_bench", n)  # warm: the page cache / shared buffers
        return _replay_rate(store, "thr_bench", n)


def _row(name: str, pg: list[float], js: list[float], unit: str) -> str:
    ratio = statistics.median(p / j for p, j in zip(pg, js, strict=True))
    return (
        f"| {name} | {statistics.median(pg):,.0f} {unit} | {statistics.median(js):,.0f} {unit} "
        f"| {ratio:.2f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--durable", type=int, default=400, help="durable appends per run")
    parser.add_argument("--deltas", type=int, default=4_000, help="delta appends per run")
    parser.add_argument("--replay", type=int, default=20_000, help="events of the replayed log")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    try:
        server = start_server(durable=True)
    except FileNotFoundError:
        print("no initdb: apt-get install postgresql", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="kun-bench-store-"))
    try:
        stores = Stores(root, server)
        rows: dict[str, tuple[list[float], list[float]]] = {
            "durable appends": ([], []),
            "delta appends": ([], []),
            "replay": ([], []),
        }
        for _ in range(args.runs):
            for i, opener in enumerate((stores.postgres, stores.jsonl)):
                rows["durable appends"][i].append(
                    anyio.run(_append_rate, opener, args.durable, _warning)
                )
                rows["delta appends"][i].append(
                    anyio.run(_append_rate, opener, args.deltas, _delta)
                )
                rows["replay"][i].append(anyio.run(_replay, opener, args.replay))
        print("| store operation | PostgreSQL | JSONL | PostgreSQL / JSONL |")
        print("| --- | --- | --- | --- |")
        for name, (pg, js) in rows.items():
            print(_row(name, pg, js, "events/s"), flush=True)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
