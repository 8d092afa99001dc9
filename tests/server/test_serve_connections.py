"""How ``kun serve``'s server treats connections that misbehave: a client
hanging up mid-body, a slow one, too many of them."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.server.live import live

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
