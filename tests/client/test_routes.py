"""The client sends exactly what :data:`kun.server.openapi.OPERATIONS`
describes: one client method per operation, with that method, path, body
Struct and answer Struct, and nothing the document does not list."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from kun.app.requests import CreateThread, StartTurn, UpdateThread
from kun.client import AsyncKunClient, KunClient, NotFound
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
    ("GET", "/v1/threads/{thread_id}/turns/{turn_id}/goal-resume"),
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


T = "thr_a"
Use = tuple[str, tuple[Any, ...], dict[str, Any]]
USES: list[Use] = [
    ("create_thread", (CreateThread(title="t"),), {}),
    ("threads", (), {"limit": 2, "cursor": "c", "include_hidden": True}),
    ("thread", (T,), {}),
    ("update_thread", (T, UpdateThread(model="m")), {}),
    ("start_turn", (T, StartTurn(text="hi")), {}),
    ("start_turn", (T, StartTurn(text="hi", multitask="enqueue")), {}),
    ("turn", (T, "trn_1"), {}),
    ("steer", (T, "trn_1", "more"), {}),
    ("interrupt", (T, "trn_1"), {"discard": True}),
    ("rewind", (T, 2), {"files": True}),
    ("undo_rewind", (T,), {}),
    ("fork", (T,), {"at_turn": "1"}),
    ("compact", (T,), {}),
    ("answer_approval", ("apr_1", "approved"), {"always": AllowRule(tool="bash")}),
    ("answer_user_input", ("inp_1", None), {}),
    ("usage", (T,), {}),
    ("usage", (T, "thr_b"), {}),
    ("transcript", (T,), {"hidden": True, "until_seq": 3}),
    ("log", (T,), {}),
    ("export_thread", (T, Path("out.kun")), {}),
    ("import_thread", (Path("dot.png"),), {"source": "codex", "as_id": "thr_c"}),
    ("follow", (T,), {}),
    ("follow_all", (), {}),
    ("set_goal", (T, "ship it"), {"token_budget": 10}),
    ("change_goal", (T,), {"status": "paused"}),
    ("change_goal", (T,), {"clear": True}),
    ("trash_thread", (T,), {}),
    ("trash", (), {}),
    ("restore_thread", ("20260101-thr_a",), {"as_id": "thr_z"}),
    ("collect", (T,), {"confirm": True}),
    ("reconcile", (), {}),
    ("providers", (), {}),
    ("openapi", (), {}),
]
"""Each client method once per route it sends (paths relative to a
folder holding ``dot.png``)."""
if hasattr(AsyncKunClient, "goal_resume"):  # added with its route by the live branch
    USES.append(("goal_resume", (T, "trn_1"), {}))


def _in(folder: Path, args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(folder / arg if isinstance(arg, Path) else arg for arg in args)


async def _use_async(kun: AsyncKunClient, use: Use, folder: Path) -> None:
    name, args, kwargs = use
    method = getattr(kun, name)
    if name.startswith("follow"):
        async with method(*_in(folder, args), **kwargs):
            return
    await method(*_in(folder, args), **kwargs)


def _use_sync(kun: KunClient, use: Use, folder: Path) -> None:
    name, args, kwargs = use
    method = getattr(kun, name)
    if name.startswith("follow"):
        with method(*_in(folder, args), **kwargs):
            return
    method(*_in(folder, args), **kwargs)


def _matches(template: str, path: str) -> bool:
    return re.fullmatch(re.sub(r"\{\w+\}", "[^/]+", template), path) is not None


def _refuse(sent: list[httpx.Request]) -> Callable[[httpx.Request], httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        request.read()
        sent.append(request)
        return httpx.Response(404, json={"error": {"code": "nope", "message": "nope"}})

    return handle


@pytest.mark.anyio
async def test_each_client_method_sends_its_routes_and_only_those(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(b"\x89PNG")
    sent: list[httpx.Request] = []
    used: set[tuple[str, str]] = set()
    async with AsyncKunClient("http://kun", transport=httpx.MockTransport(_refuse(sent))) as kun:
        assert {use[0] for use in USES} == {route.name for route in ROUTES}
        for use in USES:
            sent.clear()
            with pytest.raises(NotFound):
                await _use_async(kun, use, tmp_path)
            (request,) = sent
            (route,) = [
                r
                for r in ROUTES
                if r.name == use[0]
                and r.method == request.method
                and _matches(r.path, request.url.path)
            ]
            used.add(_key(route))
            if route.body is not None:
                msgspec.json.decode(request.content, type=route.body)
    assert used == {_key(route) for route in ROUTES}


@pytest.mark.anyio
async def test_the_two_clients_send_the_same_bytes(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(b"\x89PNG")
    by_async: list[httpx.Request] = []
    by_sync: list[httpx.Request] = []
    async with AsyncKunClient("http://kun", transport=httpx.MockTransport(_refuse(by_async))) as a:
        for use in USES:
            with pytest.raises(NotFound):
                await _use_async(a, use, tmp_path)
    with KunClient("http://kun", transport=httpx.MockTransport(_refuse(by_sync))) as k:
        for use in USES:
            if use[0] == "follow_all":
                continue  # the firehose is async only
            with pytest.raises(NotFound):
                _use_sync(k, use, tmp_path)
    by_async = [r for r in by_async if r.url.path != "/v1/events"]
    assert [(r.method, str(r.url), r.content) for r in by_sync] == [
        (r.method, str(r.url), r.content) for r in by_async
    ]
