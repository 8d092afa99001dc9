"""Benchmark the agent loop: kun's own overhead per step vs pydantic-ai's.

    python tools/bench_loop.py --setup            # once: create .bench-venv
    python tools/bench_loop.py [--steps 50,200,1000] [--repeat 3] [--dir DIR]
    python tools/bench_loop.py --pydantic-python /path/to/venv/bin/python
    python tools/bench_loop.py --profile 1000     # cProfile one kun turn

One turn of N steps, the same script for both: N-1 model responses that call
a no-op tool, then a text reply. Call i passes ``{"step": i}`` (an integer
the tool declares, validates and ignores; it returns ``"ok"``): distinct
arguments keep kun's tool-storm breaker, which does not run the third
identical call in a row, out of the way, so every call really runs.

* kun: the real loop (:func:`kun.app.session.open_service`, ``create_thread``,
  ``start_turn``, ``wait_turn``) with the :class:`ScriptedModelClient`, a
  :class:`ToolHost` holding only the no-op tool (effect ``read``, policy
  ``on-request``, so nothing asks) and the durable log on disk: a
  :class:`JsonlEventStore` in a fresh directory under ``--dir`` (default: the
  system temp dir). Every event of the turn is appended and made durable by
  the store's rules (fsyncs are counted and printed).
* pydantic-ai: ``Agent`` with a ``FunctionModel`` whose (async) function
  answers from the same script, and the same no-op tool (async, so no thread
  hop is charged to it), run with no request limit. It persists nothing.

The comparison leans toward pydantic-ai: its model function hands over whole
responses, while kun streams chunks, records each delta and fsyncs its log.
kun's model time includes the scripted client's event-loop checkpoint per
chunk (a real client yields there too).

Both must make exactly N model calls and N-1 tool calls, or the run fails.
Measured: the turn's wall time minus the time spent inside the scripted model
(kun: in ``stream`` and each ``__anext__`` of its stream; pydantic-ai: in the
model function) and inside the tool, divided by N: the framework's own
overhead per step. Each N is run ``--repeat`` times, alternating kun and
pydantic-ai, and the best run is kept (noise only adds time). Targets, as
ratios measured in this one run:

* kun's overhead per step <= pydantic-ai's, at every N;
* kun's overhead per step at the largest N <= 2x its overhead at the smallest.

Also printed for kun, per step: events, log bytes, fsyncs and the time they
took (kun's fsync, ``kun.store.jsonl._fsync``, is wrapped to count it), and
the overhead less that fsync time. ``--profile STEPS`` runs one kun turn
under cProfile instead and prints the top functions by own and cumulative
time.

pydantic-ai is not a dependency of kun and is never installed into kun's
environment. Its half runs in a subprocess of a separate interpreter: the one
given by ``--pydantic-python PATH``, or else ``.bench-venv/bin/python`` at the
repository root, which ``--setup`` creates (``python -m venv .bench-venv`` and
``pip install pydantic-ai-slim``, or ``--pydantic-spec``; the folder is git
ignored). That subprocess re-runs this file with ``--pydantic-worker``, which
imports only the standard library and pydantic-ai, and prints its timings as
JSON. Without such an interpreter only kun's half runs.

Exit status: 0 when every target is met, 1 when one is missed, 2 when the
pydantic-ai half could not run (so the comparison is not judged).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH_VENV = ROOT / ".bench-venv"
DEFAULT_STEPS = (50, 200, 1000)
TOOL = "noop"
_clock = time.perf_counter


class _Timer:
    """Seconds spent inside the scripted model and inside the tool."""

    def __init__(self) -> None:
        self.model = 0.0
        self.tool = 0.0
        self.model_calls = 0
        self.tool_calls = 0


def _result(framework: str, steps: int, wall: float, timer: _Timer, **extra: Any) -> dict[str, Any]:
    if (timer.model_calls, timer.tool_calls) != (steps, steps - 1):
        raise RuntimeError(
            f"{framework}: {timer.model_calls} model calls and {timer.tool_calls} tool calls "
            f"for a script of {steps} steps"
        )
    return {
        "framework": framework,
        "steps": steps,
        "wall": wall,
        "model": timer.model,
        "tool": timer.tool,
        "model_calls": timer.model_calls,
        "tool_calls": timer.tool_calls,
        "overhead_per_step": (wall - timer.model - timer.tool) / steps,
        **extra,
    }


# -- kun -----------------------------------------------------------------------


def _kun_parts() -> dict[str, Any]:
    """kun's classes, imported on demand: the pydantic-ai worker runs in an
    interpreter without kun."""
    from kun.app.session import open_service
    from kun.contracts.threads import ThreadSettings
    from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
    from kun.runtime.context import TurnLimits
    from kun.store import jsonl
    from kun.tools.base import ToolContext, ToolOutput, make_spec
    from kun.tools.host import ToolHost

    return {
        "ThreadSettings": ThreadSettings,
        "ScriptedModelClient": ScriptedModelClient,
        "text_reply": text_reply,
        "tool_reply": tool_reply,
        "TurnLimits": TurnLimits,
        "open_service": open_service,
        "jsonl": jsonl,
        "ToolContext": ToolContext,
        "ToolOutput": ToolOutput,
        "make_spec": make_spec,
        "ToolHost": ToolHost,
    }


class _TimedStream:
    """An async iterator that adds the time of each ``__anext__`` of the
    model's stream to the model's time."""

    __slots__ = ("_inner", "_timer")

    def __init__(self, inner: Any, timer: _Timer) -> None:
        self._inner = inner
        self._timer = timer

    def __aiter__(self) -> _TimedStream:
        return self

    async def __anext__(self) -> Any:
        start = _clock()
        try:
            return await self._inner.__anext__()
        finally:
            self._timer.model += _clock() - start


class _TimedModel:
    """A :class:`~kun.model.port.ModelClient` that times the scripted one."""

    def __init__(self, inner: Any, timer: _Timer) -> None:
        self._inner = inner
        self._timer = timer

    @property
    def provider(self) -> str:
        return str(self._inner.provider)

    @property
    def model(self) -> str:
        return str(self._inner.model)

    def stream(self, request: Any) -> _TimedStream:
        start = _clock()
        inner = self._inner.stream(request)
        self._timer.model += _clock() - start
        self._timer.model_calls += 1
        return _TimedStream(inner, self._timer)

    def with_thinking(self, effort: str) -> _TimedModel:
        return _TimedModel(self._inner.with_thinking(effort), self._timer)

    def with_max_completion_tokens(self, n: int) -> _TimedModel:
        return _TimedModel(self._inner.with_max_completion_tokens(n), self._timer)


def _noop_tool(kun: dict[str, Any], timer: _Timer) -> Any:
    spec = kun["make_spec"](
        TOOL, "Does nothing and says ok.", {"step": {"type": "integer"}}, ["step"]
    )
    output = kun["ToolOutput"](output="ok")

    class NoopTool:
        @property
        def spec(self) -> Any:
            return spec

        @property
        def effect(self) -> str:
            return "read"

        async def run(self, args: dict[str, Any], ctx: Any) -> Any:
            start = _clock()
            timer.tool_calls += 1
            timer.tool += _clock() - start
            return output

    return NoopTool()


def _kun_script(kun: dict[str, Any], steps: int) -> list[Any]:
    calls = [kun["tool_reply"](TOOL, {"step": i}, call_id=f"call_{i}") for i in range(steps - 1)]
    return [*calls, kun["text_reply"]("done")]


class _FsyncCounter:
    """Counts the store's fsyncs (``kun.store.jsonl._fsync``) while installed."""

    def __init__(self, jsonl: Any) -> None:
        self._jsonl = jsonl
        self._real: Callable[[int], None] = jsonl._fsync
        self.count = 0
        self.seconds = 0.0

    def __enter__(self) -> _FsyncCounter:
        real = self._real

        def counted(fd: int) -> None:
            start = _clock()
            real(fd)
            self.seconds += _clock() - start
            self.count += 1

        self._jsonl._fsync = counted
        return self

    def __exit__(self, *exc: object) -> None:
        self._jsonl._fsync = self._real


def _log_size(home: Path) -> tuple[int, int]:
    """Lines and bytes of the one thread log under ``home``."""
    log = next(home.rglob("events.jsonl"))
    with log.open("rb") as f:
        return sum(1 for _ in f), log.stat().st_size


async def _kun_turn(kun: dict[str, Any], steps: int, root: Path) -> dict[str, Any]:
    """One kun turn of ``steps`` steps in a fresh home under ``root``."""
    timer = _Timer()
    home = Path(tempfile.mkdtemp(prefix="kun-bench-", dir=root))
    try:
        model = _TimedModel(kun["ScriptedModelClient"](_kun_script(kun, steps)), timer)
        tools = kun["ToolHost"]([_noop_tool(kun, timer)])
        limits = kun["TurnLimits"](max_steps=steps + 1)
        settings = kun["ThreadSettings"](workspace=str(home), approval_policy="on-request")
        async with kun["open_service"](home, model, tools=tools, limits=limits) as service:
            thread_id = await service.create_thread(settings)
            with _FsyncCounter(kun["jsonl"]) as fsyncs:
                start = _clock()
                turn_id = await service.start_turn(thread_id, "go")
                turn = await service.wait_turn(thread_id, turn_id)
                wall = _clock() - start
        if turn.status != "completed":
            raise RuntimeError(f"kun's turn of {steps} steps ended {turn.status}")
        events, log_bytes = _log_size(home)
        return _result(
            "kun",
            steps,
            wall,
            timer,
            events=events,
            log_bytes=log_bytes,
            fsyncs=fsyncs.count,
            fsync_seconds=fsyncs.seconds,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run_kun(steps: list[int], root: Path) -> list[dict[str, Any]]:
    kun = _kun_parts()

    async def main() -> list[dict[str, Any]]:
        await _kun_turn(kun, 5, root)  # warm up: imports, caches
        return [await _kun_turn(kun, n, root) for n in steps]

    import anyio

    return anyio.run(main)


# -- pydantic-ai ---------------------------------------------------------------


async def _pydantic_turn(steps: int) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import UsageLimits

    timer = _Timer()
    script = [
        ModelResponse(parts=[ToolCallPart(TOOL, {"step": i}, tool_call_id=f"call_{i}")])
        for i in range(steps - 1)
    ]
    script.append(ModelResponse(parts=[TextPart("done")]))
    responses = iter(script)

    async def model(messages: Any, info: Any) -> ModelResponse:
        start = _clock()
        timer.model_calls += 1
        response = next(responses)
        timer.model += _clock() - start
        return response

    agent = Agent(FunctionModel(model), system_prompt="You are a benchmark.")

    @agent.tool_plain(name=TOOL)
    async def noop(step: int) -> str:
        """Does nothing and says ok."""
        start = _clock()
        timer.tool_calls += 1
        timer.tool += _clock() - start
        return "ok"

    start = _clock()
    result = await agent.run("go", usage_limits=UsageLimits(request_limit=None))
    wall = _clock() - start
    if result.output != "done":
        raise RuntimeError(f"pydantic-ai's run of {steps} steps said {result.output!r}")
    return _result("pydantic-ai", steps, wall, timer, messages=len(result.all_messages()))


def run_pydantic_worker(steps: list[int]) -> None:
    """The ``--pydantic-worker`` half: print the timings as one JSON line."""
    import pydantic_ai

    async def main() -> list[dict[str, Any]]:
        await _pydantic_turn(5)
        return [await _pydantic_turn(n) for n in steps]

    rows = asyncio.run(main())
    print(json.dumps({"version": pydantic_ai.__version__, "rows": rows}))


def pydantic_python(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    candidate = BENCH_VENV / "bin" / "python"
    return str(candidate) if candidate.exists() else None


def run_pydantic(python: str, steps: list[int]) -> tuple[str, list[dict[str, Any]]]:
    command = [python, str(Path(__file__).resolve()), "--pydantic-worker"]
    command += ["--steps", ",".join(map(str, steps))]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    return str(payload["version"]), list(payload["rows"])


def setup(spec: str) -> None:
    """Create ``.bench-venv`` with pydantic-ai in it (never in kun's venv)."""
    python = BENCH_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(BENCH_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", spec], check=True)
    print(f"pydantic-ai installed in {BENCH_VENV}")


# -- profile -------------------------------------------------------------------


def profile(steps: int, root: Path, top: int) -> None:
    """cProfile one kun turn of ``steps`` steps; print the top functions."""
    import cProfile
    import pstats

    import anyio

    kun = _kun_parts()
    profiler = cProfile.Profile()

    async def main() -> None:
        await _kun_turn(kun, 5, root)
        profiler.enable()
        row = await _kun_turn(kun, steps, root)
        profiler.disable()
        print(f"kun, {steps} steps: {_fmt(row['overhead_per_step'])} overhead per step\n")

    anyio.run(main)
    stats = pstats.Stats(profiler)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


# -- report --------------------------------------------------------------------


def _fmt(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} us"


def _best(rows: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    return min((r for r in rows if r["steps"] == steps), key=lambda r: r["overhead_per_step"])


def report(
    steps: list[int],
    kun_rows: list[dict[str, Any]],
    pa_rows: list[dict[str, Any]] | None,
    pa_version: str | None,
    repeat: int,
) -> int:
    """Print the table and the verdicts; return the exit status."""
    missed = False
    print(f"\nper-step overhead (wall - model - tool) / steps, best of {repeat}")
    who = f"pydantic-ai {pa_version}" if pa_version else "pydantic-ai (not run)"
    print(f"{'steps':>6}  {'kun':>10}  {who:>22}  {'kun/pa':>7}  target <= 1")
    kun_best = {n: _best(kun_rows, n) for n in steps}
    for n in steps:
        k = kun_best[n]["overhead_per_step"]
        if pa_rows is None:
            print(f"{n:>6}  {_fmt(k):>10}  {'-':>22}  {'-':>7}  n/a")
            continue
        p = _best(pa_rows, n)["overhead_per_step"]
        ok = k <= p
        missed = missed or not ok
        print(f"{n:>6}  {_fmt(k):>10}  {_fmt(p):>22}  {k / p:>7.2f}  {'ok' if ok else 'MISSED'}")
    lo, hi = steps[0], steps[-1]
    growth = kun_best[hi]["overhead_per_step"] / kun_best[lo]["overhead_per_step"]
    ok = growth <= 2.0
    missed = missed or not ok
    print(
        f"\nkun growth: per-step overhead at {hi} / at {lo} = {growth:.2f} "
        f"(target <= 2): {'ok' if ok else 'MISSED'}"
    )
    if pa_rows is not None:
        pa_growth = (
            _best(pa_rows, hi)["overhead_per_step"] / _best(pa_rows, lo)["overhead_per_step"]
        )
        print(f"pydantic-ai growth, same ratio: {pa_growth:.2f} (for orientation)")
    print("\nkun per step (best run): the durable log, and the overhead without fsync time")
    for n in steps:
        r = kun_best[n]
        cpu = r["overhead_per_step"] - r["fsync_seconds"] / n
        print(
            f"{n:>6} steps: {r['events'] / n:.1f} events, {r['log_bytes'] / n:.0f} bytes, "
            f"{r['fsyncs'] / n:.2f} fsyncs taking {_fmt(r['fsync_seconds'] / n)}; "
            f"overhead less fsync {_fmt(cpu)}; model {_fmt(r['model'] / n)}, "
            f"tool {_fmt(r['tool'] / n)}"
        )
    first, last = kun_best[lo], kun_best[hi]
    cpu_growth = (last["overhead_per_step"] - last["fsync_seconds"] / hi) / (
        first["overhead_per_step"] - first["fsync_seconds"] / lo
    )
    print(f"kun growth of the overhead less fsync, {hi} / {lo}: {cpu_growth:.2f}")
    if pa_rows is None:
        print(
            "\npydantic-ai half not run: give --pydantic-python PATH or create "
            ".bench-venv with --setup. Comparison not judged."
        )
        return 1 if missed else 2
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default=",".join(map(str, DEFAULT_STEPS)))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where the logs go (on disk)")
    parser.add_argument("--pydantic-python", default=None, help="an interpreter with pydantic-ai")
    parser.add_argument("--setup", action="store_true", help="create .bench-venv and exit")
    parser.add_argument("--pydantic-spec", default="pydantic-ai-slim", help="what --setup installs")
    parser.add_argument("--profile", type=int, default=None, metavar="STEPS")
    parser.add_argument("--top", type=int, default=30, help="rows of the profile")
    parser.add_argument("--pydantic-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    steps = sorted(int(s) for s in args.steps.split(","))
    if args.repeat < 1 or not steps or steps[0] < 1:
        parser.error("--repeat and every step count must be at least 1")
    if args.pydantic_worker:
        run_pydantic_worker(steps)
        return 0
    if args.setup:
        setup(args.pydantic_spec)
        return 0
    root = args.dir or Path(tempfile.gettempdir())
    root.mkdir(parents=True, exist_ok=True)
    if args.profile is not None:
        profile(args.profile, root, args.top)
        return 0
    python = pydantic_python(args.pydantic_python)
    kun_rows: list[dict[str, Any]] = []
    pa_rows: list[dict[str, Any]] | None = [] if python else None
    pa_version: str | None = None
    for i in range(args.repeat):
        print(f"run {i + 1}/{args.repeat}: kun ...", end="", flush=True)
        kun_rows += run_kun(steps, root)
        if python and pa_rows is not None:
            print(" pydantic-ai ...", end="", flush=True)
            try:
                pa_version, rows = run_pydantic(python, steps)
            except (OSError, subprocess.CalledProcessError, ValueError) as exc:
                stderr = getattr(exc, "stderr", None) or ""
                print(f"\npydantic-ai half failed with {python}: {exc}\n{stderr}", file=sys.stderr)
                python, pa_rows = None, None
            else:
                pa_rows += rows
        print(" done", flush=True)
    return report(steps, kun_rows, pa_rows, pa_version, args.repeat)


if __name__ == "__main__":
    sys.exit(main())
