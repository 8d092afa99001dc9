"""Benchmark what observability costs the agent loop.

    python tools/bench_observe.py [--steps 200] [--repeat 5]

One turn of N steps (N-1 responses calling a no-op tool, then a text
reply) on the real loop with a scripted model, in each of these modes,
alternating, best of ``--repeat`` runs each. The events go to the in-memory
store: with the JSONL log, a step's time is mostly the fsync's, whose noise
on a shared disk is larger than what is measured here. The log lines are
still written to real files. Modes:

* ``off``: no observer (what ``[observability]`` off gives: the loop is not
  wrapped at all);
* ``watch``: the observer with nothing to write to (the wrappers' own cost);
* ``log``: JSON lines to a daily file under the home;
* ``log+content``: the same with prompts, replies and tool I/O, scrubbed;
* ``otel``: OpenTelemetry spans (SDK provider, in-memory exporter), no log;
* ``log+otel``: both.

Printed: the turn's CPU time (``process_time``: an fsync of the log lines'
file would not count, and none is made) per step in each mode and its ratio to
``off`` measured in this same run (noise from other processes moves both),
and, for ``off``, the one thing left on the loop's path: the ``getattr``
a new run does to ask its tool host whether it observes (per turn, not per
step), and the two W3C trace-context hooks left on a path with tracing off:
the turn route's look for a ``traceparent`` header (per request) and the
provider request's merge of :data:`kun.model.transport.TRACE_HEADERS`
(per model call), each against the same work without it. Targets: ``off`` is the loop
untouched (nothing wrapped; the probe is ~100 ns a turn, the trace-context
hooks well under 1 us); ``log`` adds under 100 us a step, 0.1% of a model call
of 100 ms (a scripted model answers at once, so the ratio here is the worst
case: against a real provider the added time is the same few tens of us).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from time import process_time
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kun.contracts.threads import ThreadSettings  # noqa: E402
from kun.model.redact import Redactor  # noqa: E402
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply  # noqa: E402
from kun.observe.observer import Observer  # noqa: E402
from kun.observe.sink import DailyFiles  # noqa: E402
from kun.runtime.context import TurnLimits  # noqa: E402
from kun.runtime.recorder import EventRecorder  # noqa: E402
from kun.runtime.service import TurnService  # noqa: E402
from kun.store.memory import MemoryEventStore  # noqa: E402
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec  # noqa: E402
from kun.tools.host import ToolHost  # noqa: E402


class _Noop:
    spec = make_spec("noop", "does nothing", {"step": {"type": "integer"}})

    @property
    def effect(self) -> ToolEffect:
        return "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(output="ok")


def _script(steps: int) -> list[Any]:
    calls = [tool_reply("noop", {"step": i}, call_id=f"c{i}") for i in range(steps - 1)]
    return [*calls, text_reply("done")]


def _spans() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from kun.observe.otel import OtelSpans

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return OtelSpans(provider, owned=True)


MODES: dict[str, Callable[[Path], Observer | None]] = {
    "off": lambda home: None,
    "watch": lambda home: Observer(),
    "log": lambda home: Observer(sink=DailyFiles(home / "logs")),
    "log+content": lambda home: Observer(sink=DailyFiles(home / "logs"), content=True),
    "otel": lambda home: Observer(spans=_spans()),
    "log+otel": lambda home: Observer(sink=DailyFiles(home / "logs"), spans=_spans()),
}


async def _turn(mode: str, steps: int, root: Path) -> float:
    home = Path(tempfile.mkdtemp(prefix="kun-bench-observe-", dir=root))
    try:
        observer = MODES[mode](home)
        tools = ToolHost([_Noop()], redact=Redactor(["sk-bench-secret-value"]).scrub)
        watched = observer.watch(tools) if observer is not None else tools
        hooks = (observer,) if observer is not None else ()
        store = MemoryEventStore()
        async with store, EventRecorder(store) as recorder, anyio.create_task_group() as tg:
            service = TurnService(
                recorder,
                tg,
                model=ScriptedModelClient(_script(steps)),
                tools=watched,
                limits=TurnLimits(max_steps=steps + 1),
                hooks=hooks,
            )
            thread_id = await service.create_thread(ThreadSettings(workspace=str(home)))
            start = process_time()
            turn_id = await service.start_turn(thread_id, "go")
            turn = await service.wait_turn(thread_id, turn_id)
            wall = process_time() - start
            tg.cancel_scope.cancel()
        if observer is not None:
            observer.close()
        if turn.status != "completed":
            raise RuntimeError(f"the {mode} turn ended {turn.status}")
        return wall / steps
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _per_call(fn: Callable[[], object], n: int = 200_000) -> float:
    return min(timeit.repeat(fn, number=n, repeat=3)) / n


def _propagation_off(turn: float) -> None:
    """What the trace-context hooks cost with tracing off."""
    from contextlib import nullcontext

    from starlette.datastructures import Headers

    from kun.model.transport import TRACE_HEADERS
    from kun.observe.propagation import caller_trace

    request = Headers({"content-type": "application/json", "authorization": "Bearer t"})

    def routed() -> None:
        with caller_trace(request):
            pass

    def bare() -> None:
        with nullcontext():
            pass

    own = {"user-agent": "kun", "authorization": "Bearer k"}

    def plain() -> dict[str, str]:
        return {**own, "accept": "text/event-stream", "content-type": "application/json"}

    def merged() -> dict[str, str]:
        extra = TRACE_HEADERS.get() or {}
        return {**own, **extra, "accept": "text/event-stream", "content-type": "application/json"}

    route, route_base = _per_call(routed), _per_call(bare)
    sent, sent_base = _per_call(merged), _per_call(plain)
    added = (route - route_base) + (sent - sent_base)
    print("  propagation off (no traceparent in, none out):")
    print(f"    turn route hook   {route * 1e9:6.0f} ns  x{route / route_base:.2f} of a bare with")
    print(f"    provider headers  {sent * 1e9:6.0f} ns  x{sent / sent_base:.2f} of building them")
    print(f"    together {added * 1e9:.0f} ns a turn: x{(turn + added) / turn:.5f} of an off turn")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kun-bench-observe-"))
    best: dict[str, float] = {}
    try:
        for _ in range(args.repeat):
            for mode in MODES:
                per_step = anyio.run(_turn, mode, args.steps, root)
                best[mode] = min(best.get(mode, per_step), per_step)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    base = best["off"]
    print(f"one turn of {args.steps} steps, best of {args.repeat}; per step:")
    for mode, value in best.items():
        print(f"  {mode:<12} {value * 1e6:8.1f} us   x{value / base:.3f} of off")
    host = ToolHost([_Noop()])
    n = 200_000
    probe = timeit.timeit(lambda: getattr(host, "bind_turn", None), number=n) / n
    print(f"  off: the per-turn probe costs {probe * 1e9:.0f} ns (getattr on the tool host)")
    _propagation_off(base * args.steps)
    added = (best["log"] - base) * 1e6
    verdict = "ok" if added < 100 else "OVER"
    print(f"log adds {added:.1f} us a step (target < 100 us, 0.1% of a 100 ms call): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
