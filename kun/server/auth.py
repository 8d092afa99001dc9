"""Who may talk to the server, and where it may listen.

A server bound to anything but loopback must have a bearer token
(:func:`check_bind`): the API runs commands in a workspace. Every HTTP
request then carries ``Authorization: Bearer <token>``, compared in
constant time (:func:`hmac.compare_digest`, so the time taken does not
tell how much of a guess was right); a request without it gets 401. A
browser, whose ``EventSource`` cannot send headers, uses the web view's
cookie instead (:mod:`kun.server.web`: ``/?token=...`` sets it).
"""

from __future__ import annotations

import hmac
import ipaddress

from starlette.types import ASGIApp, Receive, Scope, Send

from kun.errors import UserMistake
from kun.server.errors import error_response
from kun.server.web import cookie_token, locked_page, token_exchange

__all__ = ["BearerAuth", "NeedsToken", "check_bind", "is_loopback"]

_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


class NeedsToken(UserMistake):
    def __init__(self, host: str) -> None:
        super().__init__(
            f"refusing to listen on {host} without a token: anyone who reaches it could run "
            "commands here; give --token-env VAR (VAR holding the token) or bind 127.0.0.1"
        )
        self.host = host


def is_loopback(host: str) -> bool:
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    if not token and not is_loopback(host):
        raise NeedsToken(host)


class BearerAuth:
    """ASGI middleware: HTTP requests without the token get 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        exchange = token_exchange(scope, self._token)
        if exchange is not None:
            await exchange(scope, receive, send)
            return
        if scope["type"] == "http" and not self._allowed(scope):
            response = locked_page(scope) or error_response(
                401, "unauthorized", "missing or wrong bearer token (Authorization: Bearer ...)"
            )
            response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
                break
        else:
            given = cookie_token(scope)
        return hmac.compare_digest(given, self._expected)
