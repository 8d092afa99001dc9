"""Which web pages may drive the server: its own, never another site's.

Two browser attacks reach a server on loopback although no other machine
can:

* DNS rebinding. A page on ``evil.example`` re-resolves its own name to
  ``127.0.0.1`` and then talks to kun as a same-origin page, reading every
  answer. Its requests still say ``Host: evil.example``, so a server without
  a token refuses any request whose ``Host`` is not a loopback name or
  address (``localhost``, ``127.0.0.1``, ``[::1]``) or the address the
  socket is bound to (421). A server with a token needs no such check: the
  rebinding page has neither the token nor the cookie, which belongs to the
  real name.
* Cross-site requests. Any page may send a "simple" ``POST`` to
  ``http://127.0.0.1:<port>`` (it cannot read the answer, but the turn
  runs), and a page on ``localhost:<other port>`` is "same-site", so even a
  ``SameSite=Strict`` cookie goes with it. A request that changes state
  (any method but ``GET``, ``HEAD``, ``OPTIONS``) and carries an ``Origin``
  naming another origin than the one it was sent to (``Host``, or
  ``X-Forwarded-Host`` behind a proxy) is refused (403), with or without a
  token, unless it carries an ``Authorization`` header, which a page can only
  add to a cross-origin request after a CORS preflight this server never
  grants. Clients that are not browsers send no ``Origin`` and are not
  concerned.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from kun.server.auth import is_loopback
from kun.server.errors import error_response

__all__ = ["OriginGuard"]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class OriginGuard:
    """ASGI middleware refusing DNS-rebound (``check_host``) and cross-origin
    requests (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, check_host: bool) -> None:
        self.app = app
        self._check_host = check_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        if self._check_host and not _local_host(host, scope):
            response = error_response(
                421,
                "bad_host",
                f"Host {host!r} is not this server's loopback address: open kun at "
                "http://127.0.0.1:<port>/ (or give the server a token to reach it by another name)",
            )
            await response(scope, receive, send)
            return
        if _cross_origin(scope, headers):
            response = error_response(
                403,
                "cross_origin",
                "a page from another origin may not change state here "
                f"(Origin {headers.get('origin', '')!r})",
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _headers(scope: Scope) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, value in scope["headers"]:
        found.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    return found


def _hostname(host: str) -> str:
    """``host`` (a ``Host`` header or an origin's netloc) without its port,
    lower-cased, an IPv6 address without its brackets."""
    try:
        return (urlsplit(f"//{host.strip()}").hostname or "").rstrip(".")
    except ValueError:
        return ""


def _local_host(host: str, scope: Scope) -> bool:
    name = _hostname(host)
    if not name:
        return False
    server = scope.get("server")
    if server and name == str(server[0]).lower().strip("[]"):
        return True
    return is_loopback(name)


def _cross_origin(scope: Scope, headers: dict[str, str]) -> bool:
    if scope["type"] != "http" or scope["method"] in _SAFE_METHODS:
        return False
    if "authorization" in headers or "origin" not in headers:
        return False
    origin = headers["origin"].strip()
    if origin == "null":
        return True
    netloc = urlsplit(origin).netloc.lower()
    targets = {headers.get("host", ""), headers.get("x-forwarded-host", "")}
    return netloc not in {target.strip().lower() for target in targets if target}
