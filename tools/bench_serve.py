"""Benchmark: SSE delivery from ``kun serve`` to many subscribers on loopback.

    python tools/bench_serve.py [--threads 100] [--subscribers 4] [--quick] [--check]

The server is the real app (:func:`kun.server.app.create_app` under
:class:`kun.server.runner.KunServer`, uvicorn on 127.0.0.1) running in this
process, so the moment each event is appended can be stamped exactly: a tap
on the recorder's bus records ``time.monotonic()`` keyed by (thread, seq)
when the event is published, which is after it is persisted. The event's
own ``at`` (ms, wall clock) is too coarse for this. The subscribers run in a
child process (the same script with ``--subscribe``), so the two cores are
both used and the client's parsing does not steal the server's loop; each
reads ``GET /v1/threads/{id}/events?until=N`` over a bare socket (HTTP/1.0,
so the body is the stream itself: httpx cost the subscribers twice the
server's CPU, and the latency measured was the client's) and stamps every
``id:`` with ``time.monotonic()``, the same system-wide clock. The CPU both
processes used is printed, so a saturated client shows.

The load is events appended through the server's single writer
(``TurnService.write``: number, validate, persist with fsync, publish), one
small ``thread_updated`` per call, not model turns: a turn's text deltas are
merged by the recorder before they reach the log, so turns would measure
the model's pacing, not the stream. Two phases, after every subscriber has
joined its thread:

- *paced*: each thread appends one event every ``--interval`` seconds (start
  times spread over the interval); the delivery latency is measured here,
  the server not saturated (target p99 < 50 ms);
- *burst*: each thread appends ``--burst`` events back to back; the server's
  throughput is those events over the time from the burst's start until the
  last subscriber has received the last of them.

The baseline is measured in the same run: the same number of burst events,
same threads and concurrency, appended through ``JsonlEventStore.append``
directly (fsync each, no recorder, no HTTP, no subscribers). Target: server
throughput >= 0.8x that raw append rate. Between the two, the same burst is
appended through the server to threads nobody follows: what the recorder
costs, apart from the delivery.

Every subscriber's received seqs are compared with its thread's log
(1..last seq): a seq missing is *lost*, one received twice *duplicated*, one
received after a higher seq *out of order*. Targets: 0, 0, 0.

``--quick``: 10 threads x 2 subscribers, 5 paced and 10 burst events each.
``--no-fsync``: fsync and fdatasync do nothing, in both the baseline and the
server: what is left is the CPU the path costs. On a shared machine the
disk's fsync latency swings several-fold from one second to the next, and
the ratio with it; this is how a change to the streaming path is compared.
The CPU rows (per burst event, without and with subscribers) are the
steadiest measure either way.
``--check`` exits 1 when a target is missed; otherwise the exit is 0.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import msgspec

from kun.contracts import events as ev
from kun.contracts.threads import ThreadSettings
from kun.model.scripted import ScriptedModelClient
from kun.runtime.context import draft
from kun.runtime.service import TurnService
from kun.server.app import create_app
from kun.server.backend import backend_over
from kun.server.runner import server_for
from kun.store import jsonl
from kun.store.jsonl import JsonlEventStore

READY_SECONDS = 60.0


class Received(msgspec.Struct, array_like=True):
    """What one subscriber got: its thread, each ``id:`` and when."""

    thread_id: str
    seqs: list[int]
    times: list[float]


# -- the subscribers (child process) -------------------------------------------


_ID = re.compile(rb"^id: ?([0-9]+)$", re.MULTILINE)


async def _subscribe(host: str, port: int, thread_id: str, until: int) -> Received:
    """One subscriber over a bare socket. The request is HTTP/1.0, so the
    body is the stream itself, not chunked, ended by the server closing the
    connection at ``until``; a frame counts as received when the piece that
    completes it arrives. (httpx cost the subscribers more CPU than the
    server spent sending: the client, not the server, set the latency.)"""
    got = Received(thread_id, [], [])
    request = f"GET /v1/threads/{thread_id}/events?until={until} HTTP/1.0\r\nHost: {host}\r\n\r\n"
    pending = b""
    head = True
    async with await anyio.connect_tcp(host, port) as stream:
        await stream.send(request.encode())
        try:
            while True:
                piece = await stream.receive()
                now = time.monotonic()
                pending += piece
                if head:
                    if b"\r\n\r\n" not in pending:
                        continue
                    status, _, pending = pending.partition(b"\r\n\r\n")
                    if b" 200 " not in status.split(b"\r\n")[0]:
                        raise SystemExit(f"{thread_id}: {status.decode()}")
                    head = False
                end = pending.rfind(b"\n\n")
                if end < 0:
                    continue
                for match in _ID.finditer(pending, 0, end):
                    got.seqs.append(int(match[1]))
                    got.times.append(now)
                pending = pending[end + 2 :]
        except anyio.EndOfStream:
            pass
    return got


async def subscribe_all(url: str, threads: list[str], per_thread: int, until: int) -> None:
    """Follow every thread ``per_thread`` times until seq ``until``; print
    what each subscriber received, as JSON, on stdout."""
    host, port = url.removeprefix("http://").split(":")
    results: list[Received] = []

    async def one(thread_id: str) -> None:
        results.append(await _subscribe(host, int(port), thread_id, until))

    async with anyio.create_task_group() as tg:
        for thread_id in threads:
            for _ in range(per_thread):
                tg.start_soon(one, thread_id)
    sys.stdout.buffer.write(msgspec.json.encode(results))
    sys.stdout.flush()


# -- the load ------------------------------------------------------------------


def _event(i: int) -> ev.Event:
    event: ev.Event = draft(ev.ThreadUpdated, title=f"bench {i}")
    return event


async def raw_append_rate(home: Path, threads: int, burst: int) -> float:
    """Events/s of ``burst`` events per thread appended through the store
    directly, one task per thread, after each thread's ``thread_created``."""
    store = JsonlEventStore(home)
    ids = [f"thr_raw{n:04d}" for n in range(threads)]
    for thread_id in ids:
        created = ev.ThreadCreated(seq=1, at=0, thread_id=thread_id, settings=ThreadSettings())
        await store.append(thread_id, [created], expected_seq=0)

    async def append(thread_id: str) -> None:
        for seq in range(2, burst + 2):
            event = msgspec.structs.replace(_event(seq), seq=seq, thread_id=thread_id, at=1)
            await store.append(thread_id, [event], expected_seq=seq - 1)

    began = time.monotonic()
    async with anyio.create_task_group() as tg:
        for thread_id in ids:
            tg.start_soon(append, thread_id)
    elapsed = time.monotonic() - began
    await store.aclose()
    return threads * burst / elapsed


async def _paced(
    service: TurnService, thread_id: str, count: int, interval: float, offset: float
) -> None:
    await anyio.sleep(offset)
    due = time.monotonic()
    for i in range(count):
        await service.write(thread_id, _event(i))
        due += interval
        await anyio.sleep(max(0.0, due - time.monotonic()))


async def _burst(service: TurnService, thread_id: str, count: int) -> None:
    for i in range(count):
        await service.write(thread_id, _event(i))


@dataclass
class Server:
    url: str
    service: TurnService
    stamps: dict[tuple[str, int], float]


@asynccontextmanager
async def serving(home: Path) -> AsyncIterator[Server]:
    """The real app under uvicorn on an ephemeral loopback port, in this
    event loop, with a tap stamping each published event."""
    app = create_app(lambda: backend_over(home, ScriptedModelClient([])))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = server_for(app, "127.0.0.1", port, log_level="warning")
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        with anyio.fail_after(READY_SECONDS):
            while True:  # uvicorn sets a flag, no event
                if server.started:
                    break
                await anyio.sleep(0.01)
        service: TurnService = app.state.service
        stamps: dict[tuple[str, int], float] = {}

        def stamp(event: ev.Event) -> None:
            stamps[(event.thread_id, event.seq)] = time.monotonic()

        untap = service.recorder.bus.tap(stamp)
        try:
            yield Server(f"http://127.0.0.1:{port}", service, stamps)
        finally:
            untap()
            server.should_exit = True
    sock.close()


# -- the run -------------------------------------------------------------------


@dataclass
class Measured:
    raw_rate: float
    server_rate: float
    append_rate: float
    quiet_rate: float
    quiet_cpu_us: float
    burst_cpu_us: float
    offered_rate: float
    paced_ms: list[float]
    burst_ms: list[float]
    lost: int
    duplicated: int
    out_of_order: int
    subscribers: int
    deliveries: int
    server_cpu: float
    client_cpu: float
    wall: float


async def _until_joined(service: TurnService, threads: list[str], per_thread: int) -> None:
    bus = service.recorder.bus
    with anyio.fail_after(READY_SECONDS):
        while True:  # the bus counts followers, it does not signal them
            if all(bus.followers(t) >= per_thread for t in threads):
                return
            await anyio.sleep(0.02)


async def measure(args: argparse.Namespace, tmp: Path) -> Measured:
    raw_rate = await raw_append_rate(tmp / "raw", args.threads, args.burst)
    began, cpu = time.monotonic(), _cpu(resource.RUSAGE_SELF)
    until = 1 + args.paced + args.burst
    async with serving(tmp / "home") as server:
        service = server.service
        settings = ThreadSettings(workspace=str(tmp))
        quiet = [await service.create_thread(settings) for _ in range(args.threads)]
        began_quiet, cpu_quiet = time.monotonic(), _cpu(resource.RUSAGE_SELF)
        async with anyio.create_task_group() as load:
            for thread_id in quiet:
                load.start_soon(_burst, service, thread_id, args.burst)
        quiet_rate = args.threads * args.burst / (time.monotonic() - began_quiet)
        quiet_cpu = _cpu(resource.RUSAGE_SELF) - cpu_quiet
        threads = [await service.create_thread(settings) for _ in range(args.threads)]
        command = [
            sys.executable, __file__, "--subscribe", server.url, "--subscribers",
            str(args.subscribers), "--until", str(until), *threads,
        ]  # fmt: skip
        output = bytearray()
        async with await anyio.open_process(command, stderr=None) as child:
            assert child.stdout is not None

            async def read() -> None:
                assert child.stdout is not None
                async for piece in child.stdout:
                    output.extend(piece)

            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                await _until_joined(service, threads, args.subscribers)
                server.stamps.clear()
                async with anyio.create_task_group() as load:
                    for n, thread_id in enumerate(threads):
                        offset = args.interval * n / len(threads)
                        load.start_soon(
                            _paced, service, thread_id, args.paced, args.interval, offset
                        )
                burst_began, cpu_burst = time.monotonic(), _cpu(resource.RUSAGE_SELF)
                async with anyio.create_task_group() as load:
                    for thread_id in threads:
                        load.start_soon(_burst, service, thread_id, args.burst)
                appended = time.monotonic() - burst_began
            await child.wait()
        burst_cpu = _cpu(resource.RUSAGE_SELF) - cpu_burst
        for thread_id in threads:
            assert await service.recorder.store.last_seq(thread_id) == until
        stamps = dict(server.stamps)
    received = msgspec.json.decode(bytes(output), type=list[Received])
    measured = _judge(args, received, stamps, burst_began, raw_rate, appended, until)
    measured.quiet_rate = quiet_rate
    measured.quiet_cpu_us = quiet_cpu / (args.threads * args.burst) * 1e6
    measured.burst_cpu_us = burst_cpu / (args.threads * args.burst) * 1e6
    measured.server_cpu = _cpu(resource.RUSAGE_SELF) - cpu
    measured.client_cpu = _cpu(resource.RUSAGE_CHILDREN)
    measured.wall = time.monotonic() - began
    return measured


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _judge(
    args: argparse.Namespace,
    received: list[Received],
    stamps: dict[tuple[str, int], float],
    burst_began: float,
    raw_rate: float,
    appended: float,
    until: int,
) -> Measured:
    expected = set(range(1, until + 1))
    lost = duplicated = out_of_order = 0
    paced: list[float] = []
    burst: list[float] = []
    last_burst = burst_began
    first_burst = 1 + args.paced + 1
    for got in received:
        lost += len(expected - set(got.seqs))
        duplicated += len(got.seqs) - len(set(got.seqs))
        out_of_order += sum(b <= a for a, b in zip(got.seqs, got.seqs[1:], strict=False))
        for seq, at in zip(got.seqs, got.times, strict=True):
            sent = stamps.get((got.thread_id, seq))
            if sent is None:
                continue
            (burst if seq >= first_burst else paced).append((at - sent) * 1000)
        for seq, at in zip(got.seqs, got.times, strict=True):
            if seq >= first_burst:
                last_burst = max(last_burst, at)
    lost += (args.threads * args.subscribers - len(received)) * until
    events = args.threads * args.burst
    return Measured(
        raw_rate=raw_rate,
        server_rate=events / max(last_burst - burst_began, 1e-9),
        append_rate=events / appended,
        quiet_rate=0.0,
        quiet_cpu_us=0.0,
        burst_cpu_us=0.0,
        offered_rate=args.threads / args.interval,
        paced_ms=paced,
        burst_ms=burst,
        lost=lost,
        duplicated=duplicated,
        out_of_order=out_of_order,
        subscribers=len(received),
        deliveries=sum(len(got.seqs) for got in received),
        server_cpu=0.0,
        client_cpu=0.0,
        wall=0.0,
    )


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


def report(args: argparse.Namespace, m: Measured) -> bool:
    """Print the table; whether every target is met."""
    p99 = _pct(m.paced_ms, 99)
    ratio = m.server_rate / m.raw_rate
    raw, append = f"{m.raw_rate:,.0f} ev/s", f"{m.append_rate:,.0f} ev/s"
    quiet = f"{m.quiet_rate:,.0f} ev/s = {m.quiet_rate / m.raw_rate:.2f}x raw"
    server = f"{m.server_rate:,.0f} ev/s = {ratio:.2f}x raw"
    deliveries = f"{m.server_rate * args.subscribers:,.0f} /s"
    server_cpu = f"{m.server_cpu:.1f} s of {m.wall:.1f} s"
    delivery_us = (m.burst_cpu_us - m.quiet_cpu_us) / args.subscribers
    burst_cpu = f"{m.burst_cpu_us:,.0f} us (delivery: {delivery_us:,.0f} us per subscriber)"
    client_cpu = f"{m.client_cpu:.1f} s of {m.wall:.1f} s"
    rows = [
        ("delivery latency p50, paced", f"{_pct(m.paced_ms, 50):.1f} ms", "", True),
        ("delivery latency p99, paced", f"{p99:.1f} ms", "< 50 ms", p99 < 50),
        ("delivery latency p50, burst", f"{_pct(m.burst_ms, 50):.1f} ms", "", True),
        ("delivery latency p99, burst", f"{_pct(m.burst_ms, 99):.1f} ms", "", True),
        ("events lost", f"{m.lost}", "0", m.lost == 0),
        ("events duplicated", f"{m.duplicated}", "0", m.duplicated == 0),
        ("events out of order", f"{m.out_of_order}", "0", m.out_of_order == 0),
        ("raw log append rate (JsonlEventStore, fsync each)", raw, "baseline", True),
        ("server append rate, no subscribers (TurnService.write)", quiet, "", True),
        ("server append rate, burst (TurnService.write)", append, "", True),
        ("server event throughput, burst (append -> all got it)", server, ">= 0.8x", ratio >= 0.8),
        ("deliveries (events x subscribers) per second, burst", deliveries, "", True),
        ("server CPU per event, burst, no subscribers", f"{m.quiet_cpu_us:,.0f} us", "", True),
        ("server CPU per event, burst, followed (until all got it)", burst_cpu, "", True),
        ("CPU of the server process (with the load)", server_cpu, "", True),
        ("CPU of the subscribers' process", client_cpu, "", True),
    ]  # fmt: skip
    print(
        f"## SSE delivery: {args.threads} threads x {args.subscribers} subscribers "
        f"({m.subscribers} connected), {args.paced} paced events per thread "
        f"({m.offered_rate:,.0f} ev/s offered) then {args.burst} in a burst; "
        f"{m.deliveries:,} deliveries{'; fsync stubbed (--no-fsync)' if args.no_fsync else ''}\n"
    )
    print("| metric | measured | target | ok |")
    print("| --- | --- | --- | --- |")
    for what, value, target, ok in rows:
        mark = ("yes" if ok else "NO") if target else ""
        print(f"| {what} | {value} | {target} | {mark} |")
    return all(ok for *_, ok in rows)


def _no_sync(fd: int) -> None:
    pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=100)
    parser.add_argument("--subscribers", type=int, default=4, help="per thread")
    parser.add_argument("--paced", type=int, default=20, help="paced events per thread")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between paced events")
    parser.add_argument("--burst", type=int, default=50, help="burst events per thread")
    parser.add_argument("--quick", action="store_true", help="10 threads x 2, 5 paced, 10 burst")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--no-fsync", action="store_true", help="stub fsync: the CPU cost only")
    parser.add_argument("--subscribe", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--until", type=int, help=argparse.SUPPRESS)
    parser.add_argument("thread_ids", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.subscribe:
        anyio.run(subscribe_all, args.subscribe, args.thread_ids, args.subscribers, args.until)
        return 0
    if args.no_fsync:  # the store binds its fsync at import
        os.fsync = os.fdatasync = jsonl._fsync = _no_sync
    if args.quick:
        args.threads, args.subscribers, args.paced, args.burst = 10, 2, 5, 10
    with tempfile.TemporaryDirectory(prefix="bench_serve") as tmp:
        measured = anyio.run(measure, args, Path(tmp))
    met = report(args, measured)
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
