"""Benchmark side files: log bytes and replay cost of a turn with a big tool output.

    python tools/bench_sidefiles.py [--mib 1] [--steps 3] [--runs 5]

Runs the same turn twice on a real ``JsonlEventStore`` with the scripted
model: a tool prints ``--mib`` MiB of text, then the model calls it
``--steps - 1`` more times with other arguments (same output: one side file)
and answers. "inline" is kun without side files (the threshold raised out of
reach), "side files" is kun as it is (issue 10, item 6). Prints, for each,
the log's bytes, the side files' bytes, the median time to replay the log
(decode + fold, as ``kun replay`` does; side files are not read) and the
median time to build the last step's request (the side files read and
checked), and the ratios side files / inline from this one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

import kun.runtime.sidefiles as sidefiles
from kun.contracts.threads import ThreadSettings
from kun.domain.reduce import replay
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.runtime.context import TurnRun
from kun.runtime.recorder import EventRecorder
from kun.runtime.request import build_request
from kun.runtime.service import TurnService
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import blobs_dir, log_path
from kun.store.reader import read_log
from kun.tools.base import Tool, ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.host import ToolHost


@dataclass
class Printer:
    output: str
    name: str = "printer"

    @property
    def spec(self) -> Any:
        return make_spec(self.name, "prints", {"n": {"type": "integer"}})

    @property
    def effect(self) -> ToolEffect:
        return "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(output=self.output)


@dataclass
class Result:
    log_bytes: int
    side_bytes: int
    replay_s: float
    request_s: float


async def one_turn(home: Path, output: str, steps: int, runs: int) -> Result:
    script = [tool_reply("printer", {"n": n}, call_id=f"c{n}") for n in range(steps)]
    model = ScriptedModelClient([*script, text_reply("done")])
    tool: Tool = Printer(output)
    store = JsonlEventStore(home)
    async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
        service = TurnService(recorder, tg, model=model, tools=ToolHost([tool]))
        settings = ThreadSettings(workspace=str(home), approval_policy="full-auto")
        thread_id = await service.create_thread(settings)
        turn_id = await service.start_turn(thread_id, "print")
        turn = await service.wait_turn(thread_id, turn_id)
        assert turn.status == "completed", turn
        state = service.state(thread_id)
        request_s = []
        for _ in range(runs):
            run = _run(service, thread_id)
            started = time.perf_counter()
            request = build_request(run, state)
            request_s.append(time.perf_counter() - started)
            assert any(getattr(i, "output", None) == output for i in request.history)
        tg.cancel_scope.cancel()
    log = log_path(home, thread_id)
    replay_s = []
    for _ in range(runs):
        started = time.perf_counter()
        replay(read_log(log))
        replay_s.append(time.perf_counter() - started)
    blobs = blobs_dir(home, thread_id)
    side = sum(p.stat().st_size for p in blobs.iterdir()) if blobs.is_dir() else 0
    return Result(
        log.stat().st_size, side, statistics.median(replay_s), statistics.median(request_s)
    )


def _run(service: TurnService, thread_id: str) -> TurnRun:
    """A fresh turn's view of the thread (so the side-file cache starts cold)."""
    blobs = service.recorder.store.blobs(thread_id)
    return TurnRun(
        thread_id=thread_id,
        turn_id="bench",
        workspace=Path("."),
        policy="full-auto",
        disable_user_input=True,
        model=service.model,
        tools=service.tools,
        limits=service.limits,
        write=lambda *events, durable=True: service.write(thread_id, *events, durable=durable),
        state=lambda: service.state(thread_id),
        approvals=service.approvals,
        questions=service.questions,
        side_files=sidefiles.SideFiles(blobs),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    line = "".join(f"{n:08d} the quick brown fox jumps over the lazy dog\n" for n in range(64))
    output = (line * int(args.mib * 1024 * 1024 / len(line) + 1))[: int(args.mib * 1024 * 1024)]
    threshold = sidefiles.SIDE_FILE_THRESHOLD
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, limit in (("inline", 1 << 62), ("side files", threshold)):
            sidefiles.SIDE_FILE_THRESHOLD = limit
            results[name] = anyio.run(
                one_turn, Path(tmp) / name.replace(" ", "_"), output, args.steps, args.runs
            )
    sidefiles.SIDE_FILE_THRESHOLD = threshold
    print(f"a turn with {args.steps} tool results of {len(output):,} bytes each (same content)")
    print(f"{'':12} {'log bytes':>12} {'side bytes':>12} {'replay ms':>10} {'request ms':>11}")
    for name, r in results.items():
        print(
            f"{name:12} {r.log_bytes:>12,} {r.side_bytes:>12,} "
            f"{r.replay_s * 1e3:>10.2f} {r.request_s * 1e3:>11.2f}"
        )
    a, b = results["inline"], results["side files"]
    print(
        f"side files / inline: log bytes {b.log_bytes / a.log_bytes:.4f}, "
        f"log + side bytes {(b.log_bytes + b.side_bytes) / a.log_bytes:.4f}, "
        f"replay {b.replay_s / a.replay_s:.3f}; a turn's first request reads the side files: "
        f"+{(b.request_s - a.request_s) * 1e3:.2f} ms"
    )


if __name__ == "__main__":
    main()
