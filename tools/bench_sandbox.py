"""Benchmark: what the sandbox costs per ``bash`` call.

    python tools/bench_sandbox.py [--calls 40] [--quick]

Each command runs through the real tool (:class:`kun.tools.builtin.bash.Bash`,
so the guard and the gate of :mod:`kun.tools.process` are in both), once
with ``[tools.bash] sandbox = "off"`` and once with ``"on"`` (``bwrap``:
read-only root, private ``/tmp``, new PID, IPC, UTS and network
namespaces), interleaved call by call so that the load of a shared machine
falls on both alike. The workspace is a git repository, so its read-only
``.git`` mount is part of every sandboxed call. Commands: ``true`` (the
fixed cost: spawning, mounts, namespaces), a small real one (``git init`` of
a fresh repository and ``ls -R`` over it, inside the workspace) and ``git
status`` of the workspace. Printed per command: the median
and p90 wall time of a call in each mode and the ratio of the medians,
sandboxed over unsandboxed, both measured in this run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from kun.tools import ToolContext
from kun.tools.builtin.bash import Bash
from kun.tools.sandbox import SandboxSettings

COMMANDS = {
    "true": "true",
    "git init + ls -R": "rm -rf repo && git init -q repo && ls -R repo > /dev/null",
    "git status": "git status --short > /dev/null",
}


async def _time_call(tool: Bash, ctx: ToolContext, command: str) -> float:
    began = time.perf_counter()
    result = await tool.run({"command": command}, ctx)
    elapsed = time.perf_counter() - began
    if not result.output.endswith("[exit code: 0]"):
        raise SystemExit(f"the command failed: {result.output}")
    return elapsed


async def _measure(calls: int, workspace: Path) -> None:
    ctx = ToolContext(workspace=workspace, thread_id="t", turn_id="u", call_id="c")
    tools = {"off": Bash(sandbox=SandboxSettings(mode="off")),
             "on": Bash(sandbox=SandboxSettings(mode="on"))}  # fmt: skip
    print(f"{calls} calls per command and mode, interleaved")
    print(f"{'command':<20} {'mode':<5} {'median ms':>10} {'p90 ms':>8}")
    for name, command in COMMANDS.items():
        for tool in tools.values():  # warm up: the probe, the page cache
            await _time_call(tool, ctx, command)
        times: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(calls):
            for mode, tool in tools.items():
                times[mode].append(await _time_call(tool, ctx, command))
        for mode in ("off", "on"):
            ordered = sorted(times[mode])
            p90 = ordered[int(0.9 * (len(ordered) - 1))]
            print(
                f"{name:<20} {mode:<5} {statistics.median(ordered) * 1e3:>10.2f} {p90 * 1e3:>8.2f}"
            )
        ratio = statistics.median(times["on"]) / statistics.median(times["off"])
        print(f"{name:<20} ratio sandboxed/unsandboxed (medians): {ratio:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="5 calls per command and mode")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        sys.exit("bwrap is not installed (apt-get install bubblewrap)")
    workspace = Path(tempfile.mkdtemp(prefix="kun-bench-sandbox-"))
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    try:
        anyio.run(_measure, 5 if args.quick else args.calls, workspace)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
