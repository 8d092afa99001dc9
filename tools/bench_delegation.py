"""Benchmark delegation batches: N ``delegate_task`` calls in one step.

    python tools/bench_delegation.py [--tasks 8] [--latency 0.2] [--runs 3]

One parent turn calls ``delegate_task`` ``--tasks`` times in one step; each
sub-agent's model answers after ``--latency`` seconds (a scripted model
standing for a provider's time to first token and answer). The same turn
runs with ``[runtime] max_parallel_agents`` = 1 (the baseline: one side
thread after another), 4 (the default) and ``--tasks`` (all at once), each
on a fresh home. It reports the turn's wall time (median over ``--runs``)
and each setting's speed-up over the baseline measured in the same run,
and the overhead per sub-agent beyond its model time (creating the side
thread, its log, its turn, the result): wall time at full parallelism
minus one latency, over the tasks.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import msgspec

from kun.app.session import open_service
from kun.contracts.items import ToolResult
from kun.contracts.model import (
    CompletedChunk,
    ModelRequest,
    ModelStreamChunk,
    ToolCallCompleteChunk,
)
from kun.contracts.threads import ThreadSettings
from kun.model.scripted import ScriptedModelClient, text_reply
from kun.runtime.delegation import SUBAGENT_PROMPT, Delegation


def tool_calls_reply(calls: list[tuple[str, dict[str, str]]]) -> list[ModelStreamChunk]:
    """One answer calling every tool of ``calls`` at once."""
    chunks: list[ModelStreamChunk] = [
        ToolCallCompleteChunk(
            call_id=f"call_{index}",
            name=name,
            arguments=msgspec.Raw(msgspec.json.encode(arguments)),
            index=index,
        )
        for index, (name, arguments) in enumerate(calls)
    ]
    return [*chunks, CompletedChunk(stop_reason="tool_calls")]


async def _turn(home: Path, tasks: int, latency: float, parallel: int) -> float:
    async def child(request: ModelRequest) -> AsyncIterator[ModelStreamChunk]:
        await anyio.sleep(latency)
        for chunk in text_reply("found it"):
            yield chunk

    def respond(request: ModelRequest) -> object:
        if SUBAGENT_PROMPT in request.system_prompt:
            return child(request)
        if any(isinstance(i, ToolResult) for i in request.history):
            return text_reply("all done")
        return tool_calls_reply([("delegate_task", {"task": f"task {n}"}) for n in range(tasks)])

    model = ScriptedModelClient(respond)  # type: ignore[arg-type]
    async with open_service(home, model) as service:
        service.delegation = Delegation(service, max_parallel=parallel)
        thread = await service.create_thread(ThreadSettings(workspace=str(home)))
        began = time.perf_counter()
        turn_id = await service.start_turn(thread, "go")
        turn = await service.wait_turn(thread, turn_id)
        elapsed = time.perf_counter() - began
    results = [i for i in turn.items if isinstance(i, ToolResult)]
    assert turn.status == "completed" and len(results) == tasks, turn.status
    assert all(r.output == "found it" for r in results)
    return elapsed


async def _main(tasks: int, latency: float, runs: int) -> None:
    settings = sorted({1, min(4, tasks), tasks})
    times: dict[int, list[float]] = {p: [] for p in settings}
    for _ in range(runs):
        for parallel in settings:
            with tempfile.TemporaryDirectory() as home:
                times[parallel].append(await _turn(Path(home), tasks, latency, parallel))
    base = statistics.median(times[1])
    print(f"{tasks} delegate_task calls in one step, {latency * 1000:.0f} ms per sub-agent")
    print(f"{'max_parallel_agents':>20} {'turn (s)':>10} {'speed-up':>9}")
    for parallel in settings:
        median = statistics.median(times[parallel])
        print(f"{parallel:>20} {median:>10.3f} {base / median:>8.2f}x")
    full = statistics.median(times[tasks])
    print(f"overhead per sub-agent at full parallelism: {(full - latency) / tasks * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    anyio.run(_main, args.tasks, args.latency, args.runs)


if __name__ == "__main__":
    main()
