"""The client sends exactly what :data:`kun.server.openapi.OPERATIONS`
describes: one client method per operation, with that method, path, body
Struct and answer Struct, and nothing the document does not list."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from kun.app.requests import CreateThread, StartTurn, UpdateThread
from kun.client import AsyncKunClient, NotFound
from kun.client.routes import ROUTES, Route
from kun.contracts.threads import AllowRule
from kun.server.openapi import OPERATIONS

NOT_THE_CLIENTS = {("GET", "/docs")}
"""A page for a browser."""

NEW_ROUTES = {
    ("PUT", "/v1/threads/{thread_id}/goal"),
    ("PATCH", "/v1/threads/{thread_id}/goal"),
    ("DELETE", "/v1/threads/{thread_id}/goal"),
    ("DELETE", "/v1/threads/{thread_id}"),
    ("GET", "/v1/trash"),
    ("POST", "/v1/trash/{entry}/restore"),
    ("POST", "/v1/threads/{thread_id}/gc"),
    ("POST", "/v1/reconcile"),
}
"""Added to the server by the in-process adapter's branch at the same time
as the client: once both are merged every one of these is in OPERATIONS
and the allowance below holds nothing."""

MEDIA = {
    "/v1/threads/{thread_id}/transcript": str,
    "/v1/threads/{thread_id}/log": bytes,
    "/v1/threads/{thread_id}/export": "Exported",
    "/v1/threads/{thread_id}/events": bytes,
    "/v1/events": bytes,
    "/openapi.json": dict,
}
"""What the client makes of the answers that are not JSON Structs."""


def _key(route: Route[Any]) -> tuple[str, str]:
    return (route.method, route.path)


def test_every_operation_has_exactly_one_route_and_no_route_is_undocumented() -> None:
    documented = {(op.method, op.path) for op in OPERATIONS} - NOT_THE_CLIENTS
    keys = [_key(route) for route in ROUTES]
    assert len(keys) == len(set(keys))
    assert documented <= set(keys)
    assert set(keys) - documented <= NEW_ROUTES


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: f"{op.method} {op.path}")
def test_each_route_sends_the_documented_body_and_decodes_the_documented_answer(op: Any) -> None:
    if (op.method, op.path) in NOT_THE_CLIENTS:
        return
    (route,) = [r for r in ROUTES if _key(r) == (op.method, op.path)]
    assert route.body is op.body or (op.body is None and route.body is None)
    structs = {a for a in op.answers.values() if isinstance(a, type)}
    if structs:
        assert structs == {route.answer}
    else:
        expected = MEDIA[op.path]
        assert route.answer is expected or route.answer.__name__ == expected


def _png(tmp: Path) -> Path:
    path = tmp / "dot.png"
    path.write_bytes(b"\x89PNG")
    return path


Use = Callable[[AsyncKunClient, Path], Awaitable[object]]
T = "thr_a"
USES: dict[str, list[Use]] = {
    "create_thread": [lambda k, p: k.create_thread(CreateThread(title="t"))],
    "threads": [lambda k, p: k.threads(limit=2, cursor="c", include_hidden=True)],
    "thread": [lambda k, p: k.thread(T)],
    "update_thread": [lambda k, p: k.update_thread(T, UpdateThread(model="m"))],
    "start_turn": [lambda k, p: k.start_turn(T, StartTurn(text="hi"))],
    "turn": [lambda k, p: k.turn(T, "trn_1")],
    "steer": [lambda k, p: k.steer(T, "trn_1", "more")],
    "interrupt": [lambda k, p: k.interrupt(T, "trn_1", discard=True)],
    "rewind": [lambda k, p: k.rewind(T, 2, files=True)],
    "undo_rewind": [lambda k, p: k.undo_rewind(T)],
    "fork": [lambda k, p: k.fork(T, at_turn="1")],
    "compact": [lambda k, p: k.compact(T)],
    "answer_approval": [
        lambda k, p: k.answer_approval("apr_1", "approved", always=AllowRule(tool="bash"))
    ],
    "answer_user_input": [lambda k, p: k.answer_user_input("inp_1", None)],
    "usage": [lambda k, p: k.usage(T), lambda k, p: k.usage(T, "thr_b")],
    "transcript": [lambda k, p: k.transcript(T, hidden=True, until_seq=3)],
    "log": [lambda k, p: k.log(T)],
    "export_thread": [lambda k, p: k.export_thread(T, p / "out.kun")],
    "import_thread": [lambda k, p: k.import_thread(_png(p), source="codex", as_id="thr_c")],
    "follow": [lambda k, p: _enter(k.follow(T))],
    "follow_all": [lambda k, p: _enter(k.follow_all())],
    "set_goal": [lambda k, p: k.set_goal(T, "ship it", token_budget=10)],
    "change_goal": [
        lambda k, p: k.change_goal(T, status="paused"),
        lambda k, p: k.change_goal(T, clear=True),
    ],
    "trash_thread": [lambda k, p: k.trash_thread(T)],
    "trash": [lambda k, p: k.trash()],
    "restore_thread": [lambda k, p: k.restore_thread("20260101-thr_a", as_id="thr_z")],
    "collect": [lambda k, p: k.collect(T, confirm=True)],
    "reconcile": [lambda k, p: k.reconcile()],
    "openapi": [lambda k, p: k.openapi()],
}


async def _enter(manager: Any) -> None:
    async with manager:
        pass


def _matches(template: str, path: str) -> bool:
    return re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", template), path) is not None


@pytest.mark.anyio
async def test_each_client_method_sends_its_routes_and_only_those(tmp_path: Path) -> None:
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(404, json={"error": {"code": "nope", "message": "nope"}})

    used: set[tuple[str, str]] = set()
    async with AsyncKunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        assert set(USES) == {route.name for route in ROUTES}
        for name, uses in USES.items():
            for use in uses:
                sent.clear()
                with pytest.raises(NotFound):
                    await use(kun, tmp_path)
                (request,) = sent
                (route,) = [
                    r
                    for r in ROUTES
                    if r.name == name
                    and r.method == request.method
                    and _matches(r.path, request.url.path)
                ]
                used.add(_key(route))
                if route.body is not None:
                    msgspec.json.decode(request.content, type=route.body)
    assert used == {_key(route) for route in ROUTES}
