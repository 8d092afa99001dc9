"""A connection refused by a local address fails at once, saying nothing
listens there; a remote refusal keeps the retry policy, each retry a line.
Attempts are counted, never timed."""

from __future__ import annotations

import errno
import socket

import httpx
import pytest

from kun.cli.lognotes import notes_from_log
from kun.model.client import HttpModelClient
from kun.model.errors import ConnectionRefusedLocally, error_from_chunk
from kun.model.refusal import is_local_host

from .fake_http import Script, Sleeps, client, collect, failing
from .support import error

pytestmark = pytest.mark.anyio


def refused(address: tuple[str, int] | None) -> httpx.ConnectError:
    """httpx's error for a refused connect, as asyncio raises it beneath."""
    text = f"Connect call failed {address!r}" if address else "Connection refused"
    exc = httpx.ConnectError("All connection attempts failed")
    exc.__cause__ = ConnectionRefusedError(errno.ECONNREFUSED, text)
    return exc


@pytest.mark.parametrize(
    ("base_url", "address"),
    [
        ("http://127.0.0.1:8080/v1", ("127.0.0.1", 8080)),
        ("http://localhost:11434/v1", None),
        ("http://[::1]:8000/v1", None),
        ("http://gpu-box.lan:1234/v1", ("192.168.1.20", 1234)),
        ("http://devbox:9000/v1", ("127.0.1.1", 9000)),
    ],
)
async def test_a_local_refusal_is_not_retried(
    base_url: str, address: tuple[str, int] | None
) -> None:
    sleeps = Sleeps()
    script = Script(failing(refused(address)))
    last = error(await collect(client(script, base_url=base_url, sleep=sleeps)))
    assert script.posts == 1 and sleeps.delays == []
    origin = base_url.removesuffix("/v1")
    assert last.code == "connection_refused"
    assert last.message.startswith(
        f"nothing is listening at {origin} \u2014 is the server running?"
    )
    assert isinstance(error_from_chunk(last), ConnectionRefusedLocally)
    assert not error_from_chunk(last).is_retryable


async def test_a_remote_refusal_is_retried_and_each_retry_is_a_line() -> None:
    sleeps = Sleeps()
    notes: list[str] = []
    script = Script(failing(refused(("93.184.216.34", 443))))
    with notes_from_log(notes.append, lambda: 5):
        last = error(await collect(client(script, sleep=sleeps)))
    assert script.posts == 5 and len(sleeps.delays) == 4
    assert last.code == "connection_error"
    assert notes == [
        f"retrying in {d:.0f} s, attempt {n}/5"
        for n, d in zip(range(2, 6), sleeps.delays, strict=True)
    ]


async def test_a_refusal_whose_address_is_unknown_keeps_the_retry_policy() -> None:
    script = Script(failing(refused(None)))
    last = error(await collect(client(script)))
    assert script.posts == 5 and last.code == "connection_error"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_a_closed_port_on_this_machine_fails_after_one_attempt(host: str) -> None:
    port = closed_port()
    sleeps = Sleeps()
    model = HttpModelClient(
        "local", "m", f"http://{host}:{port}/v1", "chat_completions", sleep=sleeps
    )
    async with model:
        last = error(await collect(model))
    assert model.last_stats is not None and model.last_stats.attempts == 1
    assert sleeps.delays == []
    assert last.code == "connection_refused"
    assert (
        f"nothing is listening at http://{host}:{port} \u2014 is the server running?"
        in last.message
    )


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("localhost", True),
        ("LOCALHOST.", True),
        ("app.localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("[::1]", True),
        ("::1", True),
        ("10.1.2.3", True),
        ("172.16.0.9", True),
        ("192.168.0.5", True),
        ("169.254.1.1", True),
        ("fe80::1%eth0", True),
        ("0.0.0.0", True),
        ("8.8.8.8", False),
        ("api.openai.com", False),
        ("localhost.example.com", False),
    ],
)
def test_which_hosts_are_local(host: str, local: bool) -> None:
    assert is_local_host(host) is local
