"""Benchmark: resident memory over a soak of turns, against what the turns
wrote to the log, and the CPU each model step costs — old and new request
path in one run.

A loopback fake provider (``tools/fake_provider.py``, its own process)
answers every request from a cycle of ``--steps`` - 1 tool calls (distinct
arguments, so the storm breaker stays out of the way) and one text reply.
Each variant runs in a fresh worker process (so one cannot inherit the
other's heap) with the real :class:`~kun.model.client.HttpModelClient` over
that socket, the real service and the durable log: ``--turns`` turns of one
thread, each tool call returning ``--output`` KiB of text the model is sent
back on every later step. Printed per variant:

* RSS growth (after the soak minus after a warm-up turn) and peak RSS
  (``VmHWM``), both divided by the bytes the turns added to the log;
* CPU seconds per model step (``time.process_time``, whole process);
* RSS after an explicit ``malloc_trim(0)`` at the end (what glibc was
  keeping, not using).

Variants: ``old`` — kun as it was before the body came in pieces (issue
19 item 24: the whole history's wire messages built and encoded as one
``bytes`` on every step), imported from ``--before DIR``, a copy of that
tree (``git archive 1a557ba kun | tar -x -C DIR``); ``new`` — this tree:
settled messages encoded once, the body sent as pieces; ``trim`` — ``new``
with glibc's ``malloc_trim(0)`` after every turn (called by the benchmark,
not by kun). The ratios printed compare them within this run; without
``--before`` the ``old`` variant is skipped.

Run: ``python tools/bench_soak_rss.py [--before DIR] [--turns 40] [--steps 6]
[--output 16] [--format chat_completions|responses|messages]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SERVER = Path(__file__).resolve().parent / "fake_provider.py"
TOOL = "read_big"
VARIANTS = ("old", "new", "trim")


def _rss_kib(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _malloc_trim() -> None:
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name:
        ctypes.CDLL(name).malloc_trim(0)


def _log_bytes(home: Path) -> int:
    return next(home.rglob("events.jsonl")).stat().st_size


def _script(steps: int) -> list[Any]:
    """The provider's cycle: ``steps - 1`` tool calls, then an answer."""
    calls = [
        [
            {
                "kind": "tool_call_delta",
                "call_id": f"call_{i}",
                "name": TOOL,
                "arguments": json.dumps({"part": i}),
            },
            {
                "kind": "tool_call_complete",
                "call_id": f"call_{i}",
                "name": TOOL,
                "arguments": {"part": i},
            },
            {"kind": "completed", "stop_reason": "tool_calls"},
        ]
        for i in range(steps - 1)
    ]
    answer = [
        {"kind": "assistant_text_delta", "text": "Read every part."},
        {"kind": "completed", "stop_reason": "stop"},
    ]
    return [*calls, answer]


async def _soak(args: argparse.Namespace, base_url: str, home: Path) -> dict[str, Any]:
    from kun.app.session import open_service
    from kun.contracts.threads import ThreadSettings
    from kun.model.client import HttpModelClient
    from kun.runtime.context import TurnLimits
    from kun.tools.base import ToolOutput, make_spec
    from kun.tools.host import ToolHost

    spec = make_spec(TOOL, "Reads one part of a big file.", {"part": {"type": "integer"}})
    size = args.output * 1024
    counter = [0]

    class BigTool:
        @property
        def spec(self) -> Any:
            return spec

        @property
        def effect(self) -> str:
            return "read"

        async def run(self, arguments: dict[str, Any], ctx: Any) -> Any:
            counter[0] += 1
            line = f"part {arguments.get('part')} call {counter[0]}: " + "lorem ipsum " * 8 + "\n"
            return ToolOutput(output=(line * (size // len(line) + 1))[:size])

    model = HttpModelClient(
        "fake", "soak-model", base_url, args.format, api_key="sk-soak", idle_timeout=60
    )
    limits = TurnLimits(max_steps=args.steps + 2)
    settings = ThreadSettings(workspace=str(home), approval_policy="on-request")
    steps = 0
    async with open_service(home, model, tools=ToolHost([BigTool()]), limits=limits) as service:
        thread = await service.create_thread(settings)

        async def turn(n: int) -> None:
            turn_id = await service.start_turn(thread, f"Read the big file, pass {n}.")
            done = await service.wait_turn(thread, turn_id)
            if done.status != "completed":
                raise RuntimeError(f"turn {n} ended {done.status}")
            if args.variant == "trim":
                _malloc_trim()

        await turn(0)
        rss_start, log_start = _rss_kib(), _log_bytes(home)
        cpu = time.process_time()
        for n in range(1, args.turns + 1):
            await turn(n)
            steps += args.steps
        cpu = time.process_time() - cpu
        rss_end, log_end = _rss_kib(), _log_bytes(home)
    await model.aclose()
    _malloc_trim()
    return {
        "rss_growth": (rss_end - rss_start) * 1024,
        "rss_peak": _rss_kib("VmHWM") * 1024,
        "rss_trimmed": _rss_kib() * 1024,
        "rss_end": rss_end * 1024,
        "log_bytes": log_end - log_start,
        "cpu_per_step": cpu / steps,
    }


def worker(args: argparse.Namespace) -> None:
    import anyio

    home = Path(tempfile.mkdtemp(prefix="kun-soak-"))
    try:
        result = anyio.run(_soak, args, args.base_url, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(json.dumps(result))


def _start_provider(fmt: str, script: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "--format", fmt, "--port", "0", "--script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline().strip()
    if not line.startswith("listening on "):
        server.kill()
        raise SystemExit(f"the fake provider did not start: {line!r}")
    return server, line.removeprefix("listening on ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--steps", type=int, default=6, help="model steps per turn")
    parser.add_argument("--output", type=int, default=16, help="KiB per tool output")
    formats = ("chat_completions", "responses", "messages")
    parser.add_argument("--format", default="chat_completions", choices=formats)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--before", type=Path, help="a copy of kun before the change")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", default="new", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "script.json"
        script.write_text(json.dumps(_script(args.steps)))
        server, base_url = _start_provider(args.format, script)
        try:
            variants = [v for v in args.variants.split(",") if v != "old" or args.before]
            results = {v: _run_variant(args, v, base_url) for v in variants}
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=10)
    _report(args, results)


def _run_variant(args: argparse.Namespace, variant: str, base_url: str) -> dict[str, Any]:
    env = dict(os.environ)
    if variant == "old":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.before), env.get("PYTHONPATH")]))
    command = [sys.executable, __file__, "--worker", "--variant", variant, "--base-url", base_url]
    command += ["--turns", str(args.turns), "--steps", str(args.steps)]
    command += ["--output", str(args.output), "--format", args.format]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"variant {variant} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _report(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    mib = 1024 * 1024
    print(
        f"{args.format}: {args.turns} turns x {args.steps} steps, {args.output} KiB per tool output"
    )
    print(
        f"{'variant':8} {'log MiB':>8} {'RSS +MiB':>9} {'growth/log':>10} "
        f"{'peak MiB':>9} {'peak/log':>9} {'trimmed MiB':>11} {'CPU ms/step':>11}"
    )
    for variant, r in results.items():
        log = r["log_bytes"]
        print(
            f"{variant:8} {log / mib:8.1f} {r['rss_growth'] / mib:9.1f} "
            f"{r['rss_growth'] / log:10.2f} {r['rss_peak'] / mib:9.1f} "
            f"{r['rss_peak'] / log:9.2f} {r['rss_trimmed'] / mib:11.1f} "
            f"{r['cpu_per_step'] * 1000:11.2f}"
        )
    if "old" in results:
        base = results["old"]
        for variant, r in results.items():
            if variant == "old":
                continue
            growth = r["rss_growth"] / base["rss_growth"] if base["rss_growth"] > 0 else 0.0
            print(
                f"{variant} / old: RSS growth x{growth:.2f}, "
                f"peak x{r['rss_peak'] / base['rss_peak']:.2f}, "
                f"CPU per step x{r['cpu_per_step'] / base['cpu_per_step']:.2f}"
            )


if __name__ == "__main__":
    main()
