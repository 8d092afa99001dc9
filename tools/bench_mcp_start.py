"""Benchmark: how long one configured stdio MCP server delays a command's
first model request, with and without its cached tool list
(:mod:`kun.mcp.listcache`), in one run.

Each sample opens the service as ``kun run`` does (``open_service`` with
the server in its configuration, in a fresh home), creates a thread, starts
a turn, and times the moment the model receives the first request:

* none: no MCP server (the floor);
* cold: the server configured, no cached list: its start is waited for
  (what every ``kun run`` paid before the cache);
* cached: the same server, its list cached by an earlier command: it starts
  beside the first request.

The server is a real ``mcp`` server in Python (its start is Python's and
the SDK's import time) that first sleeps ``--delay`` seconds, to stand for
a server that starts slowly (``npx`` fetching a package). Each variant is
sampled ``--runs`` times, interleaved; medians and the ratios to "none"
and cached/cold are printed.

Run: ``python tools/bench_mcp_start.py [--runs 5] [--delay 0]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from kun.app.session import open_service
from kun.config import Config
from kun.config.schema import McpServerTable
from kun.contracts.model import ModelRequest
from kun.contracts.threads import ThreadSettings
from kun.model.scripted import Response, ScriptedModelClient, text_reply

SERVER = """
import sys, time
time.sleep(float(sys.argv[1]))
from mcp.server.mcpserver import MCPServer
server = MCPServer("bench")

@server.tool()
def echo(text: str) -> str:
    '''Return the text.'''
    return text

server.run()
"""


async def first_request_seconds(home: Path, servers: dict[str, McpServerTable]) -> float:
    """From opening the service to the model's first request."""
    seen: list[float] = []

    def answer(request: ModelRequest) -> Response:
        seen.append(time.perf_counter())
        return text_reply("ok")

    workspace = home / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    model = ScriptedModelClient([answer])
    started = time.perf_counter()
    async with open_service(home, model, config=Config(source="bench", mcp=servers)) as service:
        thread_id = await service.create_thread(ThreadSettings(workspace=str(workspace)))
        turn_id = await service.start_turn(thread_id, "hi")
        await service.wait_turn(thread_id, turn_id)
    return seen[0] - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kun-bench-mcp-"))
    try:
        script = root / "server.py"
        script.write_text(SERVER)
        table = McpServerTable(command=sys.executable, args=(str(script), str(args.delay)))
        samples: dict[str, list[float]] = {"none": [], "cold": [], "cached": []}
        for run in range(args.runs):
            for variant in samples:
                home = root / f"{variant}-{run}"
                servers = {} if variant == "none" else {"bench": table}
                if variant == "cached":  # an earlier command listed the server
                    anyio.run(first_request_seconds, home, servers)
                samples[variant].append(anyio.run(first_request_seconds, home, servers))
        median = {name: statistics.median(times) for name, times in samples.items()}
        print(f"first model request after opening the service ({args.runs} runs, "
              f"server start delay {args.delay:g} s)")  # fmt: skip
        for name, seconds in median.items():
            print(f"  {name:<7} {seconds * 1000:8.1f} ms   x{seconds / median['none']:.1f} of none")
        print(f"  cached/cold ratio: {median['cached'] / median['cold']:.3f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
