"""The web view's routes: ``/`` (the thread list), ``/threads/{id}`` (one
thread, bookmarkable) and ``/static/{name}`` (the files of
:mod:`kun.web`), plus the browser's way in when the server has a token.

The pages are static files: the JavaScript reads the thread id from the
address and talks only to the public ``/v1`` API, so the view is a client
like any other. Static files are few and known, so they are served from a
fixed table with explicit content types, an ``ETag`` and ``no-cache`` (the
browser revalidates, so an upgraded kun is never shown with stale code).
Every page sends a Content-Security-Policy allowing only this origin:
no inline script, nothing from another host.

Token: an ``EventSource`` cannot send an ``Authorization`` header, so a
browser authenticates with a cookie. Opening any page with
``?token=<token>`` answers ``303`` to the same address without it, setting
``kun_token`` (``HttpOnly``: no script reads it; ``SameSite=Strict``: no
other site's page sends it; ``Secure`` over https), the token
percent-encoded so that any token survives as a cookie value. :class:`BearerAuth
<kun.server.auth.BearerAuth>` accepts the cookie as it accepts the header.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from importlib.resources import files
from urllib.parse import quote, unquote_to_bytes, urlencode

from starlette.datastructures import URL, QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from kun.store.errors import InvalidThreadId
from kun.store.paths import validate_thread_id

__all__ = [
    "COOKIE",
    "STATIC",
    "cookie_token",
    "locked_page",
    "send_page",
    "token_exchange",
    "web_routes",
]

COOKIE = "kun_token"
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
_PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True)
class StaticFile:
    body: bytes
    media_type: str
    etag: str


def _load() -> dict[str, StaticFile]:
    root = files("kun.web") / "static"
    found: dict[str, StaticFile] = {}
    for entry in root.iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if entry.is_file() and suffix in _TYPES:
            body = entry.read_bytes()
            etag = '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'
            found[entry.name] = StaticFile(body, _TYPES[suffix], etag)
    return found


STATIC: dict[str, StaticFile] = _load()


def send_page(request: Request, name: str, status: int = 200) -> Response:
    file = STATIC[name]
    headers = {"ETag": file.etag, "Cache-Control": "no-cache", **_PAGE_HEADERS}
    if status == 200 and request.headers.get("if-none-match") == file.etag:
        return Response(status_code=304, headers=headers)
    return Response(file.body, status_code=status, media_type=file.media_type, headers=headers)


async def thread_list(request: Request) -> Response:
    return send_page(request, "index.html")


async def thread_page(request: Request) -> Response:
    """The thread's page, or a 404 page for an id that is malformed or names
    no thread here (checked before any script runs)."""
    text = request.path_params["thread_id"]
    try:
        validate_thread_id(text)
    except InvalidThreadId:
        return send_page(request, "missing.html", 404)
    if not request.app.state.service.recorder.store.exists(text):
        return send_page(request, "missing.html", 404)
    return send_page(request, "thread.html")


async def static_file(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        return Response("not found\n", status_code=404, media_type="text/plain; charset=utf-8")
    return send_page(request, name)


def web_routes() -> list[BaseRoute]:
    return [
        Route("/", thread_list, methods=["GET", "HEAD"]),
        Route("/threads/{thread_id}", thread_page, methods=["GET", "HEAD"]),
        Route("/static/{name}", static_file, methods=["GET", "HEAD"]),
    ]


def cookie_token(scope: Scope) -> bytes:
    """The ``kun_token`` cookie's value as ``Bearer <value>`` (what the
    header would hold), or ``b""``."""
    for name, value in scope["headers"]:
        if name == b"cookie":
            for part in value.split(b";"):
                key, _, given = part.strip().partition(b"=")
                if key == COOKIE.encode() and given:
                    return b"Bearer " + unquote_to_bytes(bytes(given))
    return b""


def locked_page(scope: Scope) -> Response | None:
    """The 401 a browser gets for a page without the token: a page saying
    how to give it (the API's 401 stays JSON)."""
    path = scope["path"]
    if path.startswith("/v1/") or path == "/openapi.json":
        return None
    file = STATIC["locked.html"]
    return Response(file.body, 401, media_type=file.media_type, headers=_PAGE_HEADERS)


def token_exchange(scope: Scope, token: str) -> Response | None:
    """For a page (not the API) opened with the right ``?token=``: a 303 to
    the same address without it that sets the cookie. ``None`` otherwise
    (a wrong token is left to the middleware's 401)."""
    if scope["type"] != "http" or scope["path"].startswith("/v1/"):
        return None
    url = URL(scope=scope)
    query = QueryParams(url.query)
    given = query.get("token")
    if given is None or not hmac.compare_digest(given.encode(), token.encode()):
        return None
    rest = [(k, v) for k, v in query.multi_items() if k != "token"]
    target = scope["path"] + ("?" + urlencode(rest) if rest else "")
    response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
    response.set_cookie(
        COOKIE,
        quote(token, safe=""),
        httponly=True,
        samesite="strict",
        secure=url.scheme == "https",
        path="/",
    )
    return response
