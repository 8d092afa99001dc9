"""Benchmark the event log against baselines measured in the same run.

    python tools/bench_log.py [--events 1000000] [--dir DIR] [--keep]

Prints, each as a ratio to its baseline (these machines are noisy, so only
ratios measured in one run mean anything):

- replay: kun's streaming replay to a projection vs a bare typed
  ``msgspec`` decode of every line (target: ratio >= 0.5);
- durable append latency p50/p99 vs a bare ``os.write`` + ``os.fsync`` loop
  on the same file system (target: p50 ratio <= 1.5);
- delta throughput with group commit vs a bare write loop that fsyncs every
  64 events or 5 ms (target: ratio >= 0.5);
- start-up: ``kun replay`` of a 10-event thread vs
  ``python -c "import msgspec, click"``, both with bytecode caching on and
  warmed up, as an installed kun runs (target: ratio <= 1.5);
- peak memory (max RSS) of replaying the whole log in a fresh process
  (target: < 1 GB).

Exit status 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import msgspec

from kun.contracts import events as ev
from kun.contracts.items import AssistantText, ToolCall, ToolResult, UserMessage
from kun.contracts.usage import UsageSnapshot
from kun.domain.reduce import Projector
from kun.store.jsonl import JsonlEventStore
from kun.store.reader import read_log

THREAD = "t_bench"
_encode = msgspec.json.Encoder().encode
_WORDS = "the invoice total is computed from line amounts and tax rates rounded once".split()
_OUTPUT = "\n".join(f"{i:6d}\t" + " ".join(_WORDS[: 6 + i % 8]) for i in range(40))[:2048]


def _block(seq: int, at: int, turn: str, n: int) -> Iterator[ev.EventBase]:
    """Twenty events of one model step: 12 deltas, 5 items, 2 tool results of
    ~2 KB, one usage event — about the mix of a tool-using turn."""
    base = {"thread_id": THREAD, "turn_id": turn}
    text_id, call_a, call_b = f"txt_{n}", f"call_{n}a", f"call_{n}b"
    pieces = [" ".join(_WORDS[i % 5 : i % 5 + 3]) + " " for i in range(10)]
    for i, piece in enumerate(pieces):
        yield ev.AssistantTextDelta(seq=seq + i, at=at, item_id=text_id, text=piece, **base)
    yield ev.ItemCompleted(
        seq=seq + 10, at=at, item=AssistantText(id=text_id, text="".join(pieces)), **base
    )
    for j, call in enumerate((call_a, call_b)):
        yield ev.ToolCallDelta(
            seq=seq + 11 + j,
            at=at,
            item_id=call,
            call_id=call,
            name="read_file",
            arguments='{"path": "src/ledger/invoices.py"}',
            **base,
        )
    for j, call in enumerate((call_a, call_b)):
        item = ToolCall(
            id=call,
            status="in_progress",
            call_id=call,
            name="read_file",
            arguments=msgspec.Raw(b'{"path":"src/ledger/invoices.py"}'),
        )
        yield ev.ItemCreated(seq=seq + 13 + j, at=at, item=item, **base)
    yield ev.ItemCompleted(
        seq=seq + 15,
        at=at,
        item=UserMessage(id=f"msg_{n}", text="keep going", steered=True),
        **base,
    )
    for j, call in enumerate((call_a, call_b)):
        result = ToolResult(id=f"res_{n}{j}", call_id=call, name="read_file", output=_OUTPUT)
        yield ev.ItemCompleted(seq=seq + 16 + j, at=at, item=result, **base)
    yield ev.ItemCompleted(
        seq=seq + 18,
        at=at,
        item=AssistantText(id=f"note_{n}", text="checked both files"),
        **base,
    )
    usage = UsageSnapshot(prompt_tokens=12000 + n, completion_tokens=300, cost_usd=0.0123)
    yield ev.Usage(seq=seq + 19, at=at, usage=usage, model="bench-1", step=n, **base)


def generate(path: Path, n_events: int) -> int:
    """Write a log of at least ``n_events`` events; returns how many."""
    seq, at, n = 1, 1_767_225_600_000, 0
    with path.open("wb", buffering=1 << 20) as f:
        f.write(_encode(ev.ThreadCreated(seq=seq, at=at, thread_id=THREAD)) + b"\n")
        while seq < n_events:
            turn = f"turn_{n}"
            f.write(
                _encode(ev.TurnStarted(seq=seq + 1, at=at, thread_id=THREAD, turn_id=turn)) + b"\n"
            )
            seq += 1
            for _ in range(25):
                f.writelines(_encode(e) + b"\n" for e in _block(seq + 1, at, turn, n))
                seq += 20
                n += 1
                at += 1000
            done = ev.TurnCompleted(seq=seq + 1, at=at, thread_id=THREAD, turn_id=turn)
            f.write(_encode(done) + b"\n")
            seq += 1
    return seq


def _lines(path: Path) -> Iterator[bytes]:
    with path.open("rb", buffering=0) as f:
        rest = b""
        while chunk := f.read(1 << 20):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            yield from lines


def bench_replay(path: Path) -> tuple[float, float]:
    decoder = msgspec.json.Decoder(ev.Event)
    decode = decoder.decode

    def raw() -> int:
        count = 0
        for line in _lines(path):
            decode(line)
            count += 1
        return count

    def kun() -> int:
        projector = Projector()
        projector.apply_all(read_log(path))
        return projector.snapshot().last_seq

    rates: dict[str, list[float]] = {"raw": [], "kun": []}
    for _ in range(2):
        for name, fn in (("raw", raw), ("kun", kun)):
            start = time.perf_counter()
            count = fn()
            rates[name].append(count / (time.perf_counter() - start))
    return max(rates["raw"]), max(rates["kun"])


def _line(seq: int) -> ev.ItemCompleted:
    item = AssistantText(id=f"txt_{seq}", text="A durable item of about three hundred bytes. " * 5)
    return ev.ItemCompleted(seq=seq, at=seq, thread_id=THREAD, turn_id="turn_0", item=item)


def bench_durable(root: Path, n: int) -> tuple[list[float], list[float]]:
    bare: list[float] = []
    kun: list[float] = []
    line = _encode(_line(1)) + b"\n"
    fd = os.open(root / "bare.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    async def appends(store: JsonlEventStore, first: int) -> None:
        for seq in range(first, first + n):
            event = _line(seq)
            start = time.perf_counter()
            await store.append(THREAD, [event], expected_seq=seq - 1)
            kun.append(time.perf_counter() - start)

    async def run() -> None:
        async with JsonlEventStore(root / "home") as store:
            first = 1
            for _ in range(4):
                for _ in range(n):
                    start = time.perf_counter()
                    os.write(fd, line)
                    os.fsync(fd)
                    bare.append(time.perf_counter() - start)
                await appends(store, first)
                first += n

    anyio.run(run)
    os.close(fd)
    return bare, kun


def bench_deltas(root: Path, n: int) -> tuple[float, float]:
    def delta(seq: int) -> ev.AssistantTextDelta:
        return ev.AssistantTextDelta(
            seq=seq, at=seq, thread_id="t_delta", turn_id="turn_0", item_id="txt", text="word "
        )

    line = _encode(delta(1)) + b"\n"

    def bare() -> float:
        fd = os.open(root / "bare-delta.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        start = time.perf_counter()
        unsynced, first = 0, 0.0
        for _ in range(n):
            os.write(fd, line)
            now = time.monotonic()
            if unsynced == 0:
                first = now
            unsynced += 1
            if unsynced >= 64 or now - first >= 0.005:
                os.fsync(fd)
                unsynced = 0
        os.fsync(fd)
        elapsed = time.perf_counter() - start
        os.close(fd)
        return n / elapsed

    async def kun_run() -> float:
        async with JsonlEventStore(root / "delta-home") as store:
            await store.claim("t_delta")
            base = await store.last_seq("t_delta")
            events = [delta(base + i + 1) for i in range(n)]
            start = time.perf_counter()
            for event in events:
                await store.append("t_delta", [event], expected_seq=event.seq - 1)
            await store.sync("t_delta")
            return n / (time.perf_counter() - start)

    bare_rates, kun_rates = [], []
    for _ in range(3):
        bare_rates.append(bare())
        kun_rates.append(anyio.run(kun_run))
    return statistics.median(bare_rates), statistics.median(kun_rates)


def _time(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def bench_startup(root: Path, runs: int) -> tuple[float, float]:
    home = root / "startup-home"
    path = home / "threads" / "t_small" / "events.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("wb") as f:
        f.write(_encode(ev.ThreadCreated(seq=1, at=1, thread_id="t_small")) + b"\n")
        f.write(_encode(ev.TurnStarted(seq=2, at=2, thread_id="t_small", turn_id="u")) + b"\n")
        for seq in range(3, 10):
            item = AssistantText(id=f"x{seq}", text="hello")
            line = ev.ItemCompleted(seq=seq, at=seq, thread_id="t_small", turn_id="u", item=item)
            f.write(_encode(line) + b"\n")
        f.write(_encode(ev.TurnCompleted(seq=10, at=10, thread_id="t_small", turn_id="u")) + b"\n")
    kun_bin = shutil.which("kun", path=str(Path(sys.executable).parent)) or "kun"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base_cmd = [sys.executable, "-c", "import msgspec, click"]
    kun_cmd = [kun_bin, "replay", "t_small", "--home", str(home)]
    for _ in range(2):
        _time(base_cmd, env)
        _time(kun_cmd, env)
    base, kun = [], []
    for _ in range(runs):
        base.append(_time(base_cmd, env))
        kun.append(_time(kun_cmd, env))
    return statistics.median(base), statistics.median(kun)


def peak_replay_memory(path: Path) -> float:
    """Peak RSS (MB) of a fresh process replaying ``path``, read by that
    process from its own ``VmHWM``: ``RUSAGE_CHILDREN`` would report the
    largest child this benchmark ever waited for, and Linux carries
    ``ru_maxrss`` across ``exec``."""
    code = (
        "import sys; from pathlib import Path; from kun.domain.reduce import Projector; "
        "from kun.store.reader import read_log; p = Projector(); "
        "p.apply_all(read_log(Path(sys.argv[1]))); p.snapshot(); "
        "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True
    )
    return int(out.stdout.strip()) / 1024


def _check(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--appends", type=int, default=500, help="durable appends per round")
    parser.add_argument("--deltas", type=int, default=100_000)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kun-bench-", dir=args.dir))
    results: list[tuple[str, bool]] = []

    def report(name: str, text: str, ok: bool) -> None:
        print(f"{name:<28} {text}  [{_check(ok)}]", flush=True)
        results.append((name, ok))

    try:
        log = root / "big.jsonl"
        count = generate(log, args.events)
        size = log.stat().st_size / 1e6
        print(f"log: {count:,} events, {size:,.0f} MB at {log}", flush=True)

        raw, kun = bench_replay(log)
        report(
            "replay",
            f"kun {kun:,.0f} ev/s vs raw decode {raw:,.0f} ev/s: ratio {kun / raw:.2f} (>= 0.5)",
            kun / raw >= 0.5,
        )

        bare, durable = bench_durable(root, args.appends)
        q = statistics.quantiles
        b50, b99 = q(bare, n=100)[49], q(bare, n=100)[98]
        k50, k99 = q(durable, n=100)[49], q(durable, n=100)[98]
        report(
            "durable append latency",
            f"p50 {k50 * 1e6:,.0f} us vs bare {b50 * 1e6:,.0f} us: "
            f"ratio {k50 / b50:.2f} (<= 1.5); p99 {k99 * 1e6:,.0f} vs {b99 * 1e6:,.0f} us: "
            f"ratio {k99 / b99:.2f}",
            k50 / b50 <= 1.5,
        )

        bare_rate, kun_rate = bench_deltas(root, args.deltas)
        report(
            "delta group commit",
            f"kun {kun_rate:,.0f} ev/s vs bare {bare_rate:,.0f} ev/s: "
            f"ratio {kun_rate / bare_rate:.2f} (>= 0.5)",
            kun_rate / bare_rate >= 0.5,
        )

        base, cli = bench_startup(root, 15)
        report(
            "start-up",
            f"kun replay {cli * 1e3:.0f} ms vs import msgspec, click "
            f"{base * 1e3:.0f} ms: ratio {cli / base:.2f} (<= 1.5)",
            cli / base <= 1.5,
        )

        peak = peak_replay_memory(log)
        report(
            "peak replay memory", f"{peak:,.0f} MB for {count:,} events (< 1024 MB)", peak < 1024
        )
    finally:
        if args.keep:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    missed = [name for name, ok in results if not ok]
    print("all targets met" if not missed else f"missed: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
