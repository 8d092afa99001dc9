"""The proxy setting, through a real socket: a forward proxy on 127.0.0.1
receives the model request; a dead proxy gives a hint; an abort does not."""

from __future__ import annotations

import logging
import re
import socket
from contextlib import aclosing

import anyio
import anyio.abc
import pytest

from kun.contracts.model import ErrorChunk, ModelStreamChunk, TextDeltaChunk
from kun.model.client import HttpModelClient
from kun.model.retry import RetryPolicy

from .fake_http import REQUEST, collect
from .support import error, fixture, stop_reason, text

pytestmark = pytest.mark.anyio

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
TARGET = "http://model.invalid/v1"


class Proxy:
    """A one-shot forward proxy that answers every request itself with
    ``reply``; with ``hang`` it then keeps the connection open until the
    client closes it (``closed_by_client`` is set)."""

    def __init__(self, reply: bytes, *, hang: bool = False) -> None:
        self.reply = reply
        self.hang = hang
        self.request_lines: list[bytes] = []
        self.closed_by_client = anyio.Event()

    async def serve(self, *, task_status: anyio.abc.TaskStatus[int]) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        async with listener:
            task_status.started(listener.extra(anyio.abc.SocketAttribute.local_port))
            await listener.serve(self._handle)

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            data = b""
            while b"\r\n\r\n" not in data:
                data += await stream.receive()
            head, _, body = data.partition(b"\r\n\r\n")
            found = re.search(rb"(?i)content-length: *(\d+)", head)
            while found is not None and len(body) < int(found.group(1)):
                body += await stream.receive()
            self.request_lines.append(head.split(b"\r\n")[0])
            await stream.send(self.reply)
            if self.hang:
                try:
                    await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    self.closed_by_client.set()


def model(proxy: str) -> HttpModelClient:
    return HttpModelClient(
        "example",
        "model-x",
        TARGET,
        api_key="sk-proxy-test-key",
        proxy=proxy,
        retry=RetryPolicy(transport_errors=False),
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_model_requests_go_through_the_proxy() -> None:
    proxy = Proxy(HEAD + fixture("cc_plain_text.sse"))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            port = await tg.start(proxy.serve)
            async with model(f"http://127.0.0.1:{port}") as client:
                chunks = await collect(client)
            tg.cancel_scope.cancel()
    assert proxy.request_lines == [b"POST http://model.invalid/v1/chat/completions HTTP/1.1"]
    assert text(chunks) == "Hello, world!"
    assert stop_reason(chunks) == "stop"


async def test_a_dead_proxy_is_named_in_the_error() -> None:
    port = closed_port()
    async with model(f"http://user:pw-secret@127.0.0.1:{port}") as client:
        with anyio.fail_after(10):
            last = error(await collect(client))
    assert last.code == "connection_refused"
    assert "nothing is listening at the proxy http://user:[redacted]@127.0.0.1:" in last.message
    assert "pw-secret" not in last.message


async def test_abort_through_a_proxy_closes_the_socket_and_blames_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first = fixture("cc_plain_text.sse").split(b"\n\n")[1] + b"\n\n"
    proxy = Proxy(HEAD + first, hang=True)
    chunks: list[ModelStreamChunk] = []
    with anyio.fail_after(10), caplog.at_level(logging.DEBUG, logger="kun.model"):
        async with anyio.create_task_group() as tg:
            port = await tg.start(proxy.serve)
            async with model(f"http://127.0.0.1:{port}") as client:
                with anyio.CancelScope() as scope:
                    async with aclosing(client.stream(REQUEST)) as items:
                        async for chunk in items:
                            chunks.append(chunk)
                            if isinstance(chunk, TextDeltaChunk):
                                scope.cancel()
                await proxy.closed_by_client.wait()
            tg.cancel_scope.cancel()
    assert scope.cancelled_caught
    assert text(chunks) == "Hello"
    assert not any(isinstance(c, ErrorChunk) for c in chunks)
    assert "proxy" not in caplog.text
