"""The thread endpoints: create, list, get, update settings, rewind and
undo, fork, and the thread's goal. Each handler decodes its body into a
Struct of :mod:`kun.app.requests`, calls one method of the in-process
adapter (:class:`~kun.app.local.LocalKun`) and answers its result as JSON;
every refusal is an exception the app's handlers turn into a 4xx
(:mod:`kun.server.errors`)."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from kun.app.local import LocalKun
from kun.server.bodies import (
    ChangeGoal,
    CreateThread,
    Fork,
    NoBody,
    RewindThread,
    SetGoal,
    UpdateThread,
    read_body,
)
from kun.server.errors import ApiError

__all__ = ["json_response", "kun_of", "query_bool", "query_int", "thread_routes"]

MAX_PAGE = 500
DEFAULT_PAGE = 50


def kun_of(request: Request) -> LocalKun:
    kun: LocalKun = request.app.state.kun
    return kun


def json_response(value: Any, status: int = 200) -> Response:
    return Response(msgspec.json.encode(value), status_code=status, media_type="application/json")


def query_int(
    request: Request, name: str, *, minimum: int = 0, maximum: int | None = None
) -> int | None:
    text = request.query_params.get(name)
    if text is None:
        return None
    if not text.isdecimal() or int(text) < minimum or (maximum is not None and int(text) > maximum):
        top = f"..{maximum}" if maximum is not None else " or more"
        raise ApiError(400, "invalid_query", f"{name} must be an integer {minimum}{top}", name)
    return int(text)


def query_bool(request: Request, name: str) -> bool:
    text = request.query_params.get(name, "false").lower()
    if text not in ("true", "false", "1", "0"):
        raise ApiError(400, "invalid_query", f"{name} must be true or false", name)
    return text in ("true", "1")


async def create_thread(request: Request) -> Response:
    body = await read_body(request, CreateThread)
    return json_response(await kun_of(request).create_thread(body), 201)


async def get_threads(request: Request) -> Response:
    """A page of the thread list, newest activity first: ``limit``
    (1..500, default 50), ``cursor`` (the ``next_cursor`` of the page
    before), ``all`` (include hidden side threads), ``q`` (only threads
    whose title, workspace or id contains it, ignoring case: the web
    view's filter reaches threads it has not loaded)."""
    limit = query_int(request, "limit", minimum=1, maximum=MAX_PAGE) or DEFAULT_PAGE
    page = await kun_of(request).threads(
        limit=limit,
        cursor=request.query_params.get("cursor"),
        include_hidden=query_bool(request, "all"),
        query=request.query_params.get("q"),
    )
    return json_response(page)


async def get_thread(request: Request) -> Response:
    """The thread's projection, as ``kun replay --json`` prints it."""
    return json_response(await kun_of(request).thread(request.path_params["thread_id"]))


async def update_thread(request: Request) -> Response:
    body = await read_body(request, UpdateThread)
    return json_response(
        await kun_of(request).update_thread(request.path_params["thread_id"], body)
    )


async def rewind(request: Request) -> Response:
    body = await read_body(request, RewindThread)
    done = await kun_of(request).rewind(
        request.path_params["thread_id"], str(body.before_turn), files=body.files
    )
    return json_response(done)


async def undo_rewind(request: Request) -> Response:
    await read_body(request, NoBody)
    return json_response(await kun_of(request).undo_rewind(request.path_params["thread_id"]))


async def fork(request: Request) -> Response:
    body = await read_body(request, Fork)
    if body.at_seq is not None and body.at_turn is not None:
        raise ApiError(400, "invalid_body", "give at_seq or at_turn, not both", "at_turn")
    at_turn = str(body.at_turn) if body.at_turn is not None else None
    forked = await kun_of(request).fork(
        request.path_params["thread_id"], at_seq=body.at_seq, at_turn=at_turn
    )
    return json_response(forked, 201)


async def set_goal(request: Request) -> Response:
    """A goal for the thread, replacing any (``/goal TEXT``)."""
    body = await read_body(request, SetGoal)
    goal = await kun_of(request).set_goal(
        request.path_params["thread_id"], body.objective, token_budget=body.token_budget
    )
    return json_response(goal)


async def change_goal(request: Request) -> Response:
    """Pause, resume or complete the goal, or change its budget; a move its
    status does not allow is 409 ``goal_refused``, no goal 409 ``no_goal``."""
    body = await read_body(request, ChangeGoal)
    goal = await kun_of(request).change_goal(
        request.path_params["thread_id"],
        status=body.status,
        token_budget=body.token_budget,
        clear_budget=body.clear_budget,
    )
    return json_response(goal)


async def clear_goal(request: Request) -> Response:
    """Drop the goal (409 ``no_goal`` when there is none, as ``/goal clear``)."""
    await read_body(request, NoBody)
    goal = await kun_of(request).change_goal(request.path_params["thread_id"], clear=True)
    return json_response(goal)


def thread_routes() -> list[BaseRoute]:
    one = "/v1/threads/{thread_id}"
    return [
        Route("/v1/threads", create_thread, methods=["POST"]),
        Route("/v1/threads", get_threads, methods=["GET"]),
        Route(one, get_thread, methods=["GET"]),
        Route(one, update_thread, methods=["PATCH"]),
        Route(f"{one}/rewind", rewind, methods=["POST"]),
        Route(f"{one}/rewind/undo", undo_rewind, methods=["POST"]),
        Route(f"{one}/fork", fork, methods=["POST"]),
        Route(f"{one}/goal", set_goal, methods=["PUT"]),
        Route(f"{one}/goal", change_goal, methods=["PATCH"]),
        Route(f"{one}/goal", clear_goal, methods=["DELETE"]),
    ]
