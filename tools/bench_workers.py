"""Benchmark ``kun serve`` workers sharing PostgreSQL against one JSONL server.

    python tools/bench_workers.py [--threads 24] [--turns 4] [--runs 1]

Starts a throwaway PostgreSQL server (``tests/pg_server.py``, fsync on) and
the fake provider (:mod:`kun.testing.fake_provider`, a short answer per
request), then real ``kun serve`` processes on loopback, and prints:

- turns per second: ``--threads`` threads, each sent ``--turns`` turns at
  once with ``multitask=enqueue`` (so they queue behind each other), spread
  over the workers, until every turn has ended (seen on each thread's
  event stream); through 1, 2 and 3 workers on one database, each as a
  ratio to one ``kun serve`` on a JSONL home measured in the same run;
- SSE delivery: how long after an event is recorded (its ``at``) a
  follower receives it, p50 and p99 over every streamed event, for a
  follower on the node that runs the turns (JSONL) and on another node
  (PostgreSQL: commit, ``NOTIFY``, read back), the ratio of the two.

The machine runs everything (database, provider, workers, clients) on the
same cores, so more workers share the same CPUs: the ratios say what the
database and the forwarding cost, not what more machines would add.
Needs ``pip install -e '.[postgres]'`` and Debian's ``postgresql``.
``KUN_BENCH_KEEP=1`` keeps the workers' folders (their ``serve.out``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kun.client import AsyncKunClient  # noqa: E402
from kun.contracts import events as ev  # noqa: E402
from kun.contracts.model import CompletedChunk, TextDeltaChunk  # noqa: E402
from kun.testing.fake_provider import FakeProvider, FakeResponse  # noqa: E402
from tests.pg_server import start_server  # noqa: E402

ANSWER = FakeResponse(
    chunks=(*(TextDeltaChunk(text=f"w{n} ") for n in range(8)), CompletedChunk(stop_reason="stop")),
    per_event=True,
)
ENDS = (ev.TurnCompleted, ev.TurnFailed, ev.TurnAborted)
START_SECONDS = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def _worker(folder: Path, base_url: str, store: str | None) -> AsyncIterator[str]:
    config = folder / "kun.toml"
    text = (
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\n'
    )
    await anyio.Path(folder).mkdir(parents=True)
    await anyio.Path(config).write_text(text)
    port = _free_port()
    command = [
        sys.executable, "-m", "kun", "serve", "--port", str(port), "--config", str(config),
        "--home", str(folder / "home"), *(("--store", store) if store else ()),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with (folder / "serve.out").open("wb") as out:
        process = await anyio.open_process(
            command, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    async with process, httpx.AsyncClient(base_url=url) as client:
        try:
            with anyio.fail_after(START_SECONDS):
                while True:
                    try:
                        await client.get("/v1/threads")
                        break
                    except httpx.TransportError:
                        if process.returncode is not None:
                            raise RuntimeError(
                                f"kun serve exited: see {folder / 'serve.out'}"
                            ) from None
                        await anyio.sleep(0.05)
            yield url
        finally:
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()


@asynccontextmanager
async def _workers(
    folder: Path, base_url: str, store: str | None, count: int
) -> AsyncIterator[list[str]]:
    async with AsyncExitStack() as stack:
        urls = [
            await stack.enter_async_context(_worker(folder / f"w{n}", base_url, store))
            for n in range(count)
        ]
        yield urls


async def _follow(
    url: str, thread: str, turns: int, delays: list[float], ready: anyio.Event
) -> None:
    ended = 0
    async with AsyncKunClient(url) as kun, kun.follow(thread) as feed:
        ready.set()
        async for event in feed:
            if isinstance(event, ev.AssistantTextDelta):
                delays.append(time.time() * 1000 - event.at)
            if isinstance(event, ENDS):
                ended += 1
                if ended == turns:
                    return


async def _round(
    senders: list[str], followers: list[str], threads: int, turns: int, workspace: str
) -> tuple[float, list[float]]:
    """Turns per second, and the delivery delays (ms) the followers saw."""
    clients = [AsyncKunClient(url) for url in senders]
    delays: list[float] = []
    async with AsyncExitStack() as stack:
        for client in clients:
            await stack.enter_async_context(client)
        http = [
            await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=60))
            for url in senders
        ]
        ids = []
        for n in range(threads):
            created = await http[n % len(http)].post("/v1/threads", json={"workspace": workspace})
            ids.append(created.json()["thread_id"])
        async with anyio.create_task_group() as tg:
            for n, thread in enumerate(ids):
                ready = anyio.Event()
                tg.start_soon(_follow, followers[n % len(followers)], thread, turns, delays, ready)
                await ready.wait()
            start = time.perf_counter()
            async with anyio.create_task_group() as sending:
                for n, thread in enumerate(ids):
                    for k in range(turns):
                        target = http[(n + k) % len(http)]
                        body = {"text": f"turn {k}", "multitask": "enqueue"}
                        sending.start_soon(_send, target, thread, body)
        elapsed = time.perf_counter() - start
    return threads * turns / elapsed, delays


async def _send(client: httpx.AsyncClient, thread: str, body: dict[str, str]) -> None:
    for _attempt in range(50):
        response = await client.post(f"/v1/threads/{thread}/turns", json=body)
        if response.status_code == 202:
            return
        await anyio.sleep(0.02)  # a writer letting go as it was asked: ask again
    raise RuntimeError(f"a turn was refused: {response.status_code} {response.text}")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


async def main(threads: int, turns: int, runs: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="kun-bench-workers-"))
    server = start_server(durable=True)
    try:
        workspace = tmp / "ws"
        workspace.mkdir()
        rates: dict[str, list[float]] = {}
        local: list[float] = []
        remote: list[float] = []
        async with FakeProvider(
            [ANSWER], format="chat_completions", cycle=True, record=False
        ) as fp:
            for run in range(runs):
                folder = tmp / f"run{run}"
                async with _workers(folder / "jsonl", fp.base_url, None, 1) as urls:
                    rate, delays = await _round(urls, urls, threads, turns, str(workspace))
                rates.setdefault("JSONL, 1 worker", []).append(rate)
                local.extend(delays)
                for count in (1, 2, 3):
                    database = f"bench_{run}_{count}"
                    with psycopg.connect(server.url, autocommit=True) as admin:
                        admin.execute(f"CREATE DATABASE {database}")
                    store = server.database_url(database)
                    async with _workers(folder / f"pg{count}", fp.base_url, store, count) as urls:
                        if count == 2:
                            # the turns run on the first node, followed on the second
                            rate, delays = await _round(
                                urls[:1], urls[1:], threads, turns, str(workspace)
                            )
                            remote.extend(delays)
                        rate, _ = await _round(urls, urls, threads, turns, str(workspace))
                    rates.setdefault(f"PostgreSQL, {count} worker{'s' * (count > 1)}", []).append(
                        rate
                    )
        base = statistics.median(rates["JSONL, 1 worker"])
        print(f"{threads} threads x {turns} turns, median of {runs} run(s), fake provider\n")
        print("| setup | turns/s | ratio to JSONL |")
        print("|---|---|---|")
        for name, values in rates.items():
            rate = statistics.median(values)
            print(f"| {name} | {rate:,.1f} | {rate / base:.2f} |")
        print("\n| SSE delivery | p50 ms | p99 ms |")
        print("|---|---|---|")
        lp50, lp99 = _pct(local, 0.5), _pct(local, 0.99)
        rp50, rp99 = _pct(remote, 0.5), _pct(remote, 0.99)
        print(f"| JSONL, same node | {lp50:.1f} | {lp99:.1f} |")
        print(f"| PostgreSQL, across nodes | {rp50:.1f} | {rp99:.1f} |")
        print(f"| ratio | {rp50 / max(lp50, 0.1):.2f} | {rp99 / max(lp99, 0.1):.2f} |")
    finally:
        server.stop()
        if os.environ.get("KUN_BENCH_KEEP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=24)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    anyio.run(main, args.threads, args.turns, args.runs)
