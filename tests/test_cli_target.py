"""``with_kun`` over a server says in one line, in the client's words, why it
could not be used: a token missing or refused (named by its variable), or
nothing listening; the server's other refusals pass through as they are."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kun.app.connect import RemoteTarget
from kun.app.interface import Kun
from kun.app.refusals import NotFound
from kun.cli.target import with_kun
from kun.errors import UserMistake


class _Guarded(BaseHTTPRequestHandler):
    """A kun-shaped server: 401 without the token ``right``, else 404."""

    def do_GET(self) -> None:
        if self.headers.get("Authorization") != "Bearer right":
            self._send(401, b'{"error":{"code":"unauthorized","message":"a token is needed"}}')
        else:
            self._send(404, b'{"error":{"code":"thread_not_found","message":"no such thread"}}')

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def guarded() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Guarded)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


async def _read(kun: Kun) -> object:
    return await kun.thread("thr_x")


def test_a_missing_token_is_named_by_its_variable(guarded: str) -> None:
    with pytest.raises(UserMistake) as raised:
        with_kun(RemoteTarget(guarded, None, "KUN_TOKEN"), _read)
    assert str(raised.value) == (
        f"the server at {guarded} wants a token: put it in $KUN_TOKEN "
        "(or name its variable with --token-env VAR)"
    )


def test_a_refused_token_is_named_by_its_variable(guarded: str) -> None:
    with pytest.raises(UserMistake) as raised:
        with_kun(RemoteTarget(guarded, "wrong", "MY_TOKEN"), _read)
    assert str(raised.value) == f"the server at {guarded} refused the token in $MY_TOKEN"


def test_another_refusal_is_the_servers_own_words(guarded: str) -> None:
    with pytest.raises(NotFound) as raised:
        with_kun(RemoteTarget(guarded, "right", "KUN_TOKEN"), _read)
    assert str(raised.value) == "no such thread"


def test_nothing_listening_is_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(UserMistake) as raised:
        with_kun(RemoteTarget(url), _read)
    assert str(raised.value) == f"nothing is listening at {url} — is `kun serve` running?"
