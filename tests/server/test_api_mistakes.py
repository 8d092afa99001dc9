"""Every ``/v1`` route, read from the app's own route table (so a new route
is swept too), asked the wrong way: bad ids, every method, bodies that do
not decode or have the wrong shape, query values that are not numbers.
The answer is always a JSON error ``{"error": {code, message, field?}}``
with a 4xx status: never a 500, a hang or a dropped connection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest
from starlette.routing import Mount, Route

from tests.server.support import Api, api

pytestmark = pytest.mark.anyio

BAD_IDS = ["nope", "..%2F..%2Fetc", "%2e%2e", "th%C3%A9", "x" * 3000, "%00", "a%20b", "%FF"]
BODIES = [
    b"",
    b"{",
    b"null",
    b"[]",
    b'"text"',
    b"1e400",
    b"\xff\xfe",
    b'{"text": 5}',
    b'{"text": null}',
    b'{"zzz": 1}',
    b'{"at_seq": -1}',
    b'{"at_seq": "x"}',
    b'{"at_seq": 99999999999999999999999999}',
    b'{"before_turn": "\xc2\xb2"}',
    b'{"as": "../x"}',
]
SECONDS = 5.0


def _api_routes(routes: list[Any], prefix: str = "") -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for route in routes:
        if isinstance(route, Mount):
            found += _api_routes(route.routes, prefix + route.path)
        elif isinstance(route, Route) and (prefix + route.path).startswith("/v1/"):
            found.append((prefix + route.path, sorted(route.methods or ())))
    return found


def _fill(path: str, thread: str, value: str) -> str:
    """``path`` with its first parameter (the thread, when there is more
    than one) a real thread and every other one ``value``."""
    parts = path.split("/")
    params = [i for i, part in enumerate(parts) if part.startswith("{")]
    for n, i in enumerate(params):
        parts[i] = thread if n == 0 and len(params) > 1 else value
    return "/".join(parts)


def _json_error(response: httpx.Response, what: str) -> None:
    assert response.status_code < 500, (what, response.status_code, response.text[:300])
    if response.status_code >= 400:
        assert response.headers["content-type"] == "application/json", what
        error = response.json()["error"]
        assert isinstance(error["code"], str) and error["code"], what
        assert isinstance(error["message"], str) and error["message"], what
        assert error.get("field") is None or isinstance(error["field"], str), what


async def _ask(a: Api, method: str, url: str, body: bytes | None = None) -> httpx.Response:
    with anyio.fail_after(SECONDS):
        headers = {"content-type": "application/json"} if body is not None else None
        return await a.client.request(method, url, content=body, headers=headers)


def _streams(path: str) -> bool:
    return path.endswith("/events")


async def test_every_route_refuses_bad_ids_methods_and_bodies_in_json(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        routes = _api_routes(a.app.routes)
        assert len(routes) > 15
        for path, _methods in routes:
            for value in BAD_IDS if "{" in path else [""]:
                url = _fill(path, thread, value)
                for method in ("GET", "DELETE", "PUT", "PATCH", "POST"):
                    if method == "GET" and _streams(path) and "{" not in path:
                        continue
                    bodies = BODIES if method in ("POST", "PATCH", "PUT") else [None]
                    for body in bodies:
                        what = f"{method} {url[:80]} {body!r:.40}"
                        _json_error(await _ask(a, method, url, body), what)


QUERIES = [
    ("/v1/threads", "limit=-1", "limit"),
    ("/v1/threads", "limit=abc", "limit"),
    ("/v1/threads", "limit=", "limit"),
    ("/v1/threads", "limit=%C2%B2", "limit"),
    ("/v1/threads", "limit=99999999999999999999999", "limit"),
    ("/v1/threads", "cursor=%C2%B2.thr_x", "cursor"),
    ("/v1/threads", "cursor=abc", "cursor"),
    ("/v1/threads", "all=maybe", "all"),
    ("/v1/threads/{t}/events", "after=abc", "after"),
    ("/v1/threads/{t}/events", "after=-1", "after"),
    ("/v1/threads/{t}/events", "after=%C2%B2", "after"),
    ("/v1/threads/{t}/events", "until=99999999999999999999999", "until"),
    ("/v1/threads/{t}/events", "until=", "until"),
    ("/v1/threads/{t}/events", "zzz=1", "zzz"),
    ("/v1/events", "after=1", "after"),
    ("/v1/usage", "", "thread"),
]


@pytest.mark.parametrize(("path", "query", "field"), QUERIES, ids=[q for _, q, _ in QUERIES])
async def test_a_bad_query_value_names_its_field(
    tmp_path: Path, path: str, query: str, field: str
) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        url = path.replace("{t}", thread) + (f"?{query}" if query else "")
        response = await _ask(a, "GET", url)
        _json_error(response, url)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["field"] == field


@pytest.mark.parametrize("header", ["abc", "-1", "1.5", "99999999999999999999999", "\xb2"])
async def test_a_last_event_id_that_is_not_a_seq(tmp_path: Path, header: str) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        with anyio.fail_after(SECONDS):
            response = await a.client.get(
                f"/v1/threads/{thread}/events", headers={"last-event-id": header.encode("latin-1")}
            )
        _json_error(response, header)
        assert response.status_code == 400
        assert response.json()["error"]["field"] == "Last-Event-ID"


async def _raw_post(a: Api, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    """A request as the bytes arrive from the socket: httpx would fix the
    headers a careless client sends."""
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": [(b"host", b"kun"), *headers],
        "client": ("127.0.0.1", 1), "server": ("kun", 80),
    }  # fmt: skip

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with anyio.fail_after(SECONDS):
        await a.app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], body


async def test_a_content_length_that_is_not_a_number(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        for path in ("/v1/threads", "/v1/threads/import"):
            for length in (b"\xb2", b"abc", b"-1"):
                status, body = await _raw_post(a, path, [(b"content-length", length)])
                assert status in (400, 413), (path, length, status, body[:200])
                assert msgspec.json.decode(body)["error"]["code"], body


@pytest.mark.parametrize("route", ["rewind/undo", "compact"])
async def test_a_request_without_fields_refuses_one_sent_anyway(tmp_path: Path, route: str) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        url = f"/v1/threads/{thread}/{route}"
        response = await _ask(a, "POST", url, b'{"discard": true}')
        _json_error(response, url)
        assert response.status_code == 400 and response.json()["error"]["field"] == "discard"
        for body in (b"", b"{}"):
            assert (await _ask(a, "POST", url, body)).status_code != 400


ONE_LINE = "one line of text without control characters"


@pytest.mark.parametrize(
    "title",
    [
        "two\nlines",
        "ends with a newline\n",
        "a\ttab",
        "nul\x00",
        "esc\x1b[31m",
        "c1\x85",
        "ls\u2028",
    ],
)
async def test_a_title_with_a_control_character_is_refused(tmp_path: Path, title: str) -> None:
    async with api(tmp_path) as a:
        body = {"workspace": str(a.workspace), "title": title}
        created = await a.client.post("/v1/threads", json=body)
        thread = await a.new_thread(title="Réglage ✓ 日本")
        patched = await a.client.patch(f"/v1/threads/{thread}", json={"title": title})
        for response in (created, patched):
            assert response.status_code == 400, response.text
            error = response.json()["error"]
            assert (error["code"], error["field"]) == ("invalid_body", "title")
            assert ONE_LINE in error["message"]
        shown = await a.client.get(f"/v1/threads/{thread}")
        assert title not in shown.text


@pytest.mark.parametrize("value", [-1, 0, 1 << 63, (1 << 64) - 1, 1 << 64, 10**30])
@pytest.mark.parametrize("name", ["max_steps", "max_turn_tokens"])
async def test_a_limit_out_of_range_is_refused(tmp_path: Path, name: str, value: int) -> None:
    async with api(tmp_path) as a:
        body = {"workspace": str(a.workspace), "limits": {name: value}}
        created = await a.client.post("/v1/threads", json=body)
        thread = await a.new_thread()
        patched = await a.client.patch(f"/v1/threads/{thread}", json={"limits": {name: value}})
        for response in (created, patched):
            assert response.status_code == 400, response.text
            assert response.json()["error"]["field"] == f"limits.{name}"


@pytest.mark.parametrize("field", ["at_seq", "at_turn"])
async def test_a_fork_point_past_2_63_is_refused(tmp_path: Path, field: str) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        response = await a.client.post(f"/v1/threads/{thread}/fork", json={field: 1 << 63})
        assert response.status_code == 400, response.text
        assert response.json()["error"]["field"] == field


async def test_the_largest_limit_is_accepted(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread(limits={"max_steps": (1 << 63) - 1})
        patched = await a.client.patch(f"/v1/threads/{thread}", json={"title": "Réglage ✓ 日本"})
        assert patched.status_code == 200, patched.text
