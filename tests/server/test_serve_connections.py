"""How ``kun serve``'s server treats connections that misbehave: a client
hanging up mid-body, a slow one, too many of them."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import httpx
import msgspec
import pytest
from anyio.abc import SocketStream

from kun.server.connections import ConnectionLimits
from tests.server.live import WAIT_SECONDS, live

pytestmark = pytest.mark.anyio

HALF_A_BODY = (
    b"POST /v1/threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b'Content-Length: 100\r\n\r\n{"title": '
)


async def test_a_client_hanging_up_mid_body_is_one_line_without_a_traceback(
    tmp_path: Path,
) -> None:
    async with live(tmp_path) as server:
        with server.connect() as sock:
            sock.sendall(HALF_A_BODY)
            await anyio.sleep(0.1)
        said = await server.records.until(lambda line: "hung up" in line)
        assert len(said) == 1, said
        assert said[0] == "POST /v1/threads: the client hung up before its body arrived"
        assert server.records.tracebacks() == []
        assert not [line for line in server.records.lines() if "Exception" in line]


QUICK = ConnectionLimits(header_seconds=0.5, body_seconds=0.5, max_connections=100)


async def _answer(stream: SocketStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    got = b""
    with anyio.fail_after(WAIT_SECONDS):
        while True:
            try:
                got += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return got


async def _trickle(stream: SocketStream, data: bytes) -> bytes:
    """``data`` a byte every 50 ms while the server listens; what it
    answered once it closed the connection."""
    answer = b""

    async def send() -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            for byte in data:
                await stream.send(bytes([byte]))
                await anyio.sleep(0.05)
        await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(send)
        answer = await _answer(stream)
        tg.cancel_scope.cancel()
    return answer


def _json_error(answer: bytes, status: int, code: str) -> dict[str, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), answer[:200]
    assert b"connection: close" in head.lower(), head
    error: dict[str, str] = msgspec.json.decode(body)["error"]
    assert error["code"] == code, error
    return error


async def test_headers_sent_a_byte_at_a_time_get_a_408_and_the_connection_closes(
    tmp_path: Path,
) -> None:
    request = b"GET /v1/threads HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"x" * 10_000
    async with live(tmp_path, QUICK) as server:
        async with await anyio.connect_tcp(server.host, server.port) as stream:
            answer = await _trickle(stream, request)
        _json_error(answer, 408, "request_timeout")
        assert "its request headers came too slowly" in " ".join(server.records.lines())


async def test_a_connection_that_sends_nothing_is_closed_without_a_word(tmp_path: Path) -> None:
    async with live(tmp_path, QUICK) as server:
        async with await anyio.connect_tcp(server.host, server.port) as stream:
            assert await _answer(stream) == b""


async def test_a_body_sent_a_byte_at_a_time_gets_a_408(tmp_path: Path) -> None:
    head = (
        b"POST /v1/threads HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 10000\r\n\r\n"
    )
    async with live(tmp_path, QUICK) as server:
        async with await anyio.connect_tcp(server.host, server.port) as stream:
            await stream.send(head)
            answer = await _trickle(stream, b'{"title": "' + b"x" * 9000)
        _json_error(answer, 408, "request_timeout")
        assert server.records.tracebacks() == []
        async with httpx.AsyncClient(base_url=server.url) as client:
            assert (await client.get("/v1/threads")).json()["threads"] == []


async def test_a_request_in_time_is_served_and_the_connection_kept(tmp_path: Path) -> None:
    async with live(tmp_path, QUICK) as server, httpx.AsyncClient(base_url=server.url) as client:
        for _ in range(3):
            created = await client.post("/v1/threads", json={"workspace": str(tmp_path)})
            assert created.status_code == 201, created.text
        assert len((await client.get("/v1/threads")).json()["threads"]) == 3


async def test_over_the_cap_a_new_connection_gets_503_while_the_open_ones_go_on(
    tmp_path: Path,
) -> None:
    limits = ConnectionLimits(max_connections=3)
    async with (
        live(tmp_path, limits) as server,
        httpx.AsyncClient(base_url=server.url) as client,
        httpx.AsyncClient(base_url=server.url) as follower,
        await anyio.connect_tcp(server.host, server.port) as idle,
        follower.stream("GET", "/v1/events") as events,
    ):
        assert events.status_code == 200
        lines = events.aiter_lines()
        assert (await client.get("/v1/threads")).status_code == 200  # kept alive: the third
        async with await anyio.connect_tcp(server.host, server.port) as fourth:
            await fourth.send(b"GET /v1/threads HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = await _answer(fourth)
        error = _json_error(answer, 503, "too_many_connections")
        assert b"retry-after: 1" in answer.lower() and "retry" in error["message"]
        created = await client.post("/v1/threads", json={"workspace": str(tmp_path)})
        assert created.status_code == 201, created.text
        with anyio.fail_after(WAIT_SECONDS):
            async for line in lines:
                if created.json()["thread_id"] in line:
                    break
        await idle.send(b"GET /v1/threads HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert b"HTTP/1.1 200" in await idle.receive()


async def test_an_unexpected_error_is_one_json_500_and_one_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("kun.app.local_reads.list_threads", broken)
    async with live(tmp_path) as server, httpx.AsyncClient(base_url=server.url) as client:
        response = await client.get("/v1/threads")
        assert response.status_code == 500
        assert response.json()["error"] == {
            "code": "internal",
            "message": "internal error: RuntimeError",
        }
        assert (await client.get("/openapi.json")).status_code == 200
    assert server.records.tracebacks() == ["GET /v1/threads failed"]
    assert not [line for line in server.records.lines() if "Exception in ASGI" in line]
