"""Benchmark: a fixed suite of agent tasks through ``kun serve``'s HTTP + SSE API.

    python tools/bench_suite.py [--runs 3] [--token-delay 0.005] [--out FILE] [--baseline FILE]

The replay benchmark of the source document (000, §9: "run a fixed set of
tasks, measure TTFT, tool time and usage", compared with a baseline as the
regression net of the model layer). ``tools/bench_replay.py`` is already
issue 10's benchmark of ``kun replay``, hence this name.

It starts the loopback fake provider (:class:`kun.testing.fake_provider.
FakeProvider`, chat completions, streaming each token as its own SSE event
``--token-delay`` seconds apart, usage on every response) and ``kun serve``
as a user runs it (a subprocess on 127.0.0.1 with a ``kun.toml`` pointing at
the provider), then runs each task ``--runs`` times, one after another (the
provider's script is served in order), each in a fresh thread over a fresh
copy of a small workspace:

- ``answer``: a plain streamed answer;
- ``one_tool``: ``read_file``, then the answer;
- ``parallel_reads``: two ``read_file`` calls in one response, then the answer;
- ``approval``: ``edit_file`` under the ``auto`` policy, which asks; the
  benchmark answers the approval over HTTP (``POST /v1/approvals/{id}``) as
  soon as ``approval_requested`` arrives on the stream;
- ``multi_step_edit``: read, edit, read again, answer (three model steps).

Each task is followed on ``GET /v1/threads/{id}/events?live=1`` opened
before the turn is started; the turn is ``POST``ed and the stream read until
its terminal event. Measured per task:

- ``ttft_ms``: from sending the turn to receiving its first model output
  (a text or tool-call fragment, preview or durable); median of the runs;
- ``turn_ms``: from sending the turn to receiving its terminal event; median;
- ``tool_calls``: ``tool_call_started`` events per run;
- ``tool_p95_ms``: p95 of ``tool_call_finished.duration_ms`` over the runs
  (the runtime's own measure, whole ms: 0 is under a millisecond);
- ``delivery_p50_ms``/``delivery_p95_ms``: receipt (wall clock) less the
  event's ``at``, over durable events but deltas (a merged delta keeps the
  ``at`` of its first fragment, so its age is the merge window's);
- ``prompt_tokens``, ``completion_tokens``, ``cost_usd``: the ``usage``
  events' sums per run; ``events``: durable events per run; ``approvals``
  answered and ``tool_failures`` (tool calls that did not complete) per run.

``overall`` holds the same over every task (sums per run for counts and
usage). ``--out`` writes the report as JSON; ``--baseline`` reads a report
so written and prints, per task and metric, now / baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ModelStreamChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    ToolCallDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.testing.fake_provider import FakeProvider, FakeResponse

SUITE = "kun-bench-suite/1"
START_SECONDS = 30.0
TASK_SECONDS = 60.0
TERMINAL = frozenset({"turn_completed", "turn_failed", "turn_aborted"})
FIRST_OUTPUT = frozenset({"assistant_text_delta", "tool_call_delta"})
NOTES = "# Notes\n\nstatus: draft\n"
FILES = {"a.py": "print('a')\n", "b.py": "print('b')\n", "notes.md": NOTES}


# -- the tasks -----------------------------------------------------------------


def _usage(prompt: int, completion: int) -> UsageChunk:
    return UsageChunk(usage=UsageSnapshot(prompt_tokens=prompt, completion_tokens=completion))


def _say(text: str) -> list[ModelStreamChunk]:
    words = text.split(" ")
    chunks: list[ModelStreamChunk] = [
        TextDeltaChunk(text=w if i == 0 else " " + w) for i, w in enumerate(words)
    ]
    return [*chunks, _usage(200, len(words)), CompletedChunk(stop_reason="stop")]


def _call(*calls: tuple[str, dict[str, Any]]) -> list[ModelStreamChunk]:
    chunks: list[ModelStreamChunk] = []
    for n, (name, arguments) in enumerate(calls):
        text = json.dumps(arguments)
        call_id = f"call_{n}"
        chunks += [
            ToolCallDeltaChunk(call_id=call_id, name=name, arguments=text),
            ToolCallCompleteChunk(
                call_id=call_id,
                name=name,
                arguments=msgspec.Raw(text.encode()),
                arguments_text=text,
            ),
        ]
    return [*chunks, _usage(150, 20 * len(calls)), CompletedChunk(stop_reason="tool_calls")]


ANSWER = (
    "kun keeps every change of a thread as a typed event in one append-only log, "
    "so any client can follow a turn, disconnect, and resume exactly where it left off."
)
EDIT_A = {"path": "a.py", "old_string": "print('a')", "new_string": "print('A')"}
EDIT_NOTES = {"path": "notes.md", "old_string": "status: draft", "new_string": "status: done"}


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    policy: str
    steps: tuple[list[ModelStreamChunk], ...]


TASKS = (
    Task("answer", "What is kun?", "on-request", (_say(ANSWER),)),
    Task(
        "one_tool",
        "What does a.py print?",
        "on-request",
        (_call(("read_file", {"path": "a.py"})), _say("a.py prints a.")),
    ),
    Task(
        "parallel_reads",
        "Compare a.py and b.py.",
        "on-request",
        (
            _call(("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"})),
            _say("They print a and b."),
        ),
    ),
    Task(
        "approval",
        "Make a.py print A.",
        "auto",
        (_call(("edit_file", EDIT_A)), _say("Done: a.py prints A.")),
    ),
    Task(
        "multi_step_edit",
        "Mark the notes done.",
        "on-request",
        (
            _call(("read_file", {"path": "notes.md"})),
            _call(("edit_file", EDIT_NOTES)),
            _call(("read_file", {"path": "notes.md"})),
            _say("The notes are marked done."),
        ),
    ),
)


# -- one run of one task ---------------------------------------------------------


@dataclass
class Run:
    status: str = "timeout"
    ttft_ms: float | None = None
    turn_ms: float = 0.0
    tool_calls: int = 0
    tool_ms: list[float] = field(default_factory=list)
    delivery_ms: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    events: int = 0
    approvals: int = 0
    tool_failures: int = 0


def _note(run: Run, kind: str, data: dict[str, Any], received: float, since: float) -> None:
    """Account one durable event of the turn's stream."""
    run.events += 1
    if not kind.endswith("_delta"):
        run.delivery_ms.append(time.time() * 1000 - data["at"])
    if kind == "tool_call_started":
        run.tool_calls += 1
    elif kind == "tool_call_finished":
        run.tool_ms.append(float(data.get("duration_ms", 0)))
        run.tool_failures += data.get("status", "completed") != "completed"
    elif kind == "usage":
        usage = data["usage"]
        run.prompt_tokens += usage.get("prompt_tokens", 0)
        run.completion_tokens += usage.get("completion_tokens", 0)
        run.cost_usd += usage.get("cost_usd") or 0.0
    elif kind in TERMINAL:
        run.status = kind.removeprefix("turn_")
        run.turn_ms = (received - since) * 1000


async def run_task(client: httpx.AsyncClient, task: Task, workspace: Path) -> Run:
    created = await client.post(
        "/v1/threads", json={"workspace": str(workspace), "approval_policy": task.policy}
    )
    created.raise_for_status()
    thread = created.json()["thread_id"]
    run = Run()
    since = 0.0
    url = f"/v1/threads/{thread}/events"
    with anyio.move_on_after(TASK_SECONDS):
        async with client.stream("GET", url, params={"live": "1"}, timeout=None) as stream:
            stream.raise_for_status()
            since = time.monotonic()
            started = await client.post(f"/v1/threads/{thread}/turns", json={"text": task.prompt})
            started.raise_for_status()
            kind = ""
            async for line in stream.aiter_lines():
                if line.startswith("event:"):
                    kind = line[6:].strip()
                    continue
                if not line.startswith("data:"):
                    continue
                received = time.monotonic()
                data = json.loads(line[5:])
                first = data.get("kind") if kind == "preview" else kind
                if run.ttft_ms is None and first in FIRST_OUTPUT:
                    run.ttft_ms = (received - since) * 1000
                if kind == "preview":
                    continue
                _note(run, kind, data, received, since)
                if kind == "approval_requested":
                    run.approvals += 1
                    answer = {"decision": "approved"}
                    answered = await client.post(
                        f"/v1/approvals/{data['approval_id']}", json=answer
                    )
                    answered.raise_for_status()
                if kind in TERMINAL:
                    break
    return run


# -- the report ------------------------------------------------------------------


def _pct(values: list[float], q: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 2)
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 2)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def summarize(runs: list[Run]) -> dict[str, Any]:
    """One task's (or the whole suite's) metrics over its runs."""
    count = len(runs)
    statuses = sorted({r.status for r in runs})
    return {
        "status": statuses[0] if len(statuses) == 1 else "mixed: " + ",".join(statuses),
        "ttft_ms": _median([r.ttft_ms for r in runs if r.ttft_ms is not None]),
        "turn_ms": _median([r.turn_ms for r in runs]),
        "tool_calls": sum(r.tool_calls for r in runs) / count,
        "tool_p95_ms": _pct([ms for r in runs for ms in r.tool_ms], 95),
        "delivery_p50_ms": _pct([ms for r in runs for ms in r.delivery_ms], 50),
        "delivery_p95_ms": _pct([ms for r in runs for ms in r.delivery_ms], 95),
        "prompt_tokens": sum(r.prompt_tokens for r in runs) / count,
        "completion_tokens": sum(r.completion_tokens for r in runs) / count,
        "cost_usd": round(sum(r.cost_usd for r in runs) / count, 6),
        "events": sum(r.events for r in runs) / count,
        "approvals": sum(r.approvals for r in runs) / count,
        "tool_failures": sum(r.tool_failures for r in runs) / count,
    }


def build_report(results: dict[str, list[Run]], runs: int, token_delay: float) -> dict[str, Any]:
    tasks = {name: summarize(done) for name, done in results.items()}
    every = [run for done in results.values() for run in done]
    overall = summarize(every)
    per_run = len(results)
    for key in (
        "tool_calls",
        "prompt_tokens",
        "completion_tokens",
        "events",
        "approvals",
        "tool_failures",
    ):
        overall[key] = round(overall[key] * per_run, 2)
    overall["cost_usd"] = round(overall["cost_usd"] * per_run, 6)
    overall["turn_ms"] = _median([sum(d[i].turn_ms for d in results.values()) for i in range(runs)])
    return {
        "suite": SUITE,
        "runs": runs,
        "token_delay": token_delay,
        "tasks": tasks,
        "overall": overall,
    }


COLUMNS = (
    "status", "ttft_ms", "turn_ms", "tool_calls", "tool_p95_ms", "delivery_p50_ms",
    "delivery_p95_ms", "prompt_tokens", "completion_tokens", "events", "approvals",
    "tool_failures",
)  # fmt: skip


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def print_report(report: dict[str, Any]) -> None:
    print(f"## Task suite over kun serve ({report['runs']} run(s) per task)\n")
    print("| task | " + " | ".join(COLUMNS) + " |")
    print("|" + " --- |" * (len(COLUMNS) + 1))
    rows = [*report["tasks"].items(), ("overall", report["overall"])]
    for name, metrics in rows:
        print(f"| {name} | " + " | ".join(_cell(metrics.get(c)) for c in COLUMNS) + " |")


def _ratio(now: Any, before: Any) -> str:
    if not isinstance(now, int | float) or not isinstance(before, int | float):
        return "-"
    if before:
        return f"{now / before:.2f}x"
    return "1.00x" if now == before else f"{_cell(now)} (was 0)"


def compare(report: dict[str, Any], baseline: dict[str, Any]) -> None:
    """Print now / baseline for every numeric metric ("-": not in both)."""
    metrics = [c for c in COLUMNS if c != "status"]
    print("\n## Against the baseline: now / baseline (< 1: less time, fewer)\n")
    print("| task | " + " | ".join(metrics) + " |")
    print("|" + " --- |" * (len(metrics) + 1))
    old_rows = {**baseline.get("tasks", {}), "overall": baseline.get("overall", {})}
    for name, now in [*report["tasks"].items(), ("overall", report["overall"])]:
        old = old_rows.get(name, {})
        cells = [_ratio(now.get(m), old.get(m)) for m in metrics]
        print(f"| {name} | " + " | ".join(cells) + " |")


# -- serving -----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def kun_serve(tmp: Path, base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """``kun serve`` in a subprocess over ``tmp``, with a client to it."""
    config = tmp / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        f'base_url = "{base_url}"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\n'
    )
    port = _free_port()
    command = [
        sys.executable, "-m", "kun", "serve", "--port", str(port),
        "--config", str(config), "--home", str(tmp / "home"),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with (tmp / "serve.out").open("wb") as out:
        process = await anyio.open_process(
            command, env=env, cwd=tmp, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    async with process, httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        try:
            with anyio.fail_after(START_SECONDS):
                while True:
                    try:
                        await client.get("/v1/threads")
                        break
                    except httpx.TransportError:
                        if process.returncode is not None:
                            raise SystemExit(
                                "kun serve exited:\n" + (tmp / "serve.out").read_text()
                            ) from None
                        await anyio.sleep(0.05)
            yield client
        finally:
            if process.returncode is None:
                process.terminate()
                with anyio.move_on_after(15):
                    await process.wait()
            if process.returncode is None:
                process.kill()


def _workspace(root: Path, name: str) -> Path:
    workspace = root / name
    workspace.mkdir(parents=True)
    for file, text in FILES.items():
        (workspace / file).write_text(text)
    return workspace


async def run_suite(
    runs: int, token_delay: float, tmp: Path, on_run: Callable[[str, int, Run], None]
) -> dict[str, list[Run]]:
    script = [
        FakeResponse(chunks=tuple(step), per_event=True, piece_delay=token_delay)
        for _ in range(runs)
        for task in TASKS
        for step in task.steps
    ]
    results: dict[str, list[Run]] = {task.name: [] for task in TASKS}
    async with FakeProvider(script, format="chat_completions") as provider:
        async with kun_serve(tmp, provider.base_url) as client:
            for n in range(runs):
                for task in TASKS:
                    run = await run_task(client, task, _workspace(tmp / "ws", f"{task.name}-{n}"))
                    results[task.name].append(run)
                    on_run(task.name, n, run)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each task (default 3)")
    parser.add_argument(
        "--token-delay", type=float, default=0.005, help="seconds between streamed tokens"
    )
    parser.add_argument("--out", type=Path, help="write the report (JSON) here")
    parser.add_argument("--baseline", type=Path, help="a saved report to compare with")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    baseline = None
    if args.baseline is not None:
        try:
            baseline = json.loads(args.baseline.read_text())
        except (OSError, ValueError) as exc:
            parser.error(f"cannot read the baseline {args.baseline}: {exc}")

    def on_run(name: str, n: int, run: Run) -> None:
        print(f"run {n + 1} {name}: {run.status}", file=sys.stderr, flush=True)

    tmp = Path(tempfile.mkdtemp(prefix="bench_suite"))
    try:
        results = anyio.run(run_suite, args.runs, args.token_delay, tmp, on_run)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = build_report(results, args.runs, args.token_delay)
    print_report(report)
    if baseline is not None:
        compare(report, baseline)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nreport written to {args.out}")
    failed = [name for name, done in results.items() if any(r.status != "completed" for r in done)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
