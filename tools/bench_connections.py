"""Benchmark what the connection deadlines and cap cost a request.

    python tools/bench_connections.py [--requests 2000] [--runs 5]

Serves the real app (uvicorn on 127.0.0.1, in this process) twice in one
run: with uvicorn's own h11 protocol (the baseline) and with
``KunH11Protocol`` (a header deadline armed and cancelled per request, a
body deadline per body, the cap checked per connection). Each run sends
``--requests`` small requests over one kept-alive connection, half of them
``POST`` with a JSON body, each written in one piece (httpx writes a body
apart from its headers, and the delayed ACK that meets would cost 40 ms a
request); prints the medians and the ratio kun / h11.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from anyio.abc import SocketStream

from kun.model.scripted import ScriptedModelClient
from kun.server.app import create_app
from kun.server.backend import backend_over
from kun.server.runner import server_for

_BODY = b'{"title": "x", "limits": {"max_steps": 3}}'
_POST = (
    b"PATCH /v1/threads/thr_nope HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(_BODY), _BODY)
)
_GET = b"GET /v1/threads/thr_nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


async def _answer(stream: SocketStream) -> None:
    """Read one answer (headers and a Content-Length body)."""
    got = b""
    while b"\r\n\r\n" not in got:
        got += await stream.receive()
    head, _, body = got.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += await stream.receive()


async def _one_run(home: Path, protocol: str, requests: int) -> float:
    app = create_app(lambda: backend_over(home, ScriptedModelClient([])))
    server = server_for(app, "127.0.0.1", 0, log_level="warning")
    if protocol == "h11":
        server.config.http = "h11"
    server.config.access_log = False
    sock = socket.create_server(("127.0.0.1", 0))  # clients wait in its backlog until served
    port = sock.getsockname()[1]
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            began = time.perf_counter()
            for n in range(requests):
                await stream.send(_POST if n % 2 else _GET)
                await _answer(stream)
            took = time.perf_counter() - began
        server.should_exit = True
    return took


async def main(requests: int, runs: int) -> None:
    took: dict[str, list[float]] = {"h11": [], "kun": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            for protocol in took:
                took[protocol].append(await _one_run(Path(tmp) / "home", protocol, requests))
    base, kun = (statistics.median(took[p]) for p in ("h11", "kun"))
    print(f"{requests} requests, median of {runs} runs")
    print(f"uvicorn h11      {base * 1000:8.1f} ms  ({base / requests * 1e6:.0f} us/request)")
    print(f"KunH11Protocol   {kun * 1000:8.1f} ms  ({kun / requests * 1e6:.0f} us/request)")
    print(f"ratio kun / h11  {kun / base:8.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    anyio.run(main, args.requests, args.runs)
