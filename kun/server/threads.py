"""The thread endpoints: create, list, get, update settings, rewind and
undo, fork. Each handler decodes its body into a Struct of
:mod:`kun.server.bodies`, acts through the :class:`~kun.server.backend.Backend`
and answers JSON; every refusal is an exception the app's handlers turn
into a 4xx (:mod:`kun.server.errors`)."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from kun.app.answers import Forked, RewindDone, RewindUndone, ThreadPage
from kun.app.listing import ThreadSummary, list_threads
from kun.app.threadops import fork_at, rewind_before, undo_latest_rewind
from kun.contracts.events import FilesRestore
from kun.domain.turnref import find_turn
from kun.runtime.checkpoints import UNTRACKED_NOTE
from kun.server.backend import Backend
from kun.server.bodies import CreateThread, Fork, NoBody, RewindThread, UpdateThread, read_body
from kun.server.errors import ApiError

__all__ = ["backend_of", "json_response", "query_bool", "query_int", "thread_routes"]

MAX_PAGE = 500
DEFAULT_PAGE = 50


def backend_of(request: Request) -> Backend:
    backend: Backend = request.app.state.backend
    return backend


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
    backend = backend_of(request)
    body = await read_body(request, CreateThread)
    thread_id = await backend.create(body)
    settings = backend.service.state(thread_id).settings
    return json_response(backend.options(thread_id).answer(settings, thread_id), 201)


async def get_threads(request: Request) -> Response:
    """A page of the thread list, newest activity first: ``limit``
    (1..500, default 50), ``cursor`` (the ``next_cursor`` of the page
    before), ``all`` (include hidden side threads), ``q`` (only threads
    whose title, workspace or id contains it, ignoring case: the web
    view's filter reaches threads it has not loaded)."""
    backend = backend_of(request)
    limit = query_int(request, "limit", minimum=1, maximum=MAX_PAGE) or DEFAULT_PAGE
    after = _cursor(request.query_params.get("cursor"))
    include_hidden = query_bool(request, "all")
    found = await anyio.to_thread.run_sync(
        lambda: list_threads(backend.home, include_hidden=include_hidden)
    )
    needle = request.query_params.get("q", "").strip().casefold()
    if needle:
        found = [s for s in found if _matches(s, needle)]
    if after is not None:
        found = [s for s in found if (s.updated_at, s.thread_id) < after]
    page = found[:limit]
    more = len(found) > limit
    cursor = _cursor_of(page[-1]) if more and page else None
    return json_response(ThreadPage(threads=page, next_cursor=cursor))


def _matches(summary: ThreadSummary, needle: str) -> bool:
    return any(
        needle in text.casefold() for text in (summary.title, summary.workspace, summary.thread_id)
    )


def _cursor_of(summary: ThreadSummary) -> str:
    return f"{summary.updated_at}.{summary.thread_id}"


def _cursor(text: str | None) -> tuple[int, str] | None:
    if text is None:
        return None
    at, _, thread_id = text.partition(".")
    if not at.isdecimal() or not thread_id:
        raise ApiError(400, "invalid_query", "cursor is not a next_cursor of this API", "cursor")
    return int(at), thread_id


async def get_thread(request: Request) -> Response:
    """The thread's projection, as ``kun replay --json`` prints it."""
    state = await backend_of(request).state(request.path_params["thread_id"])
    return json_response(state)


async def update_thread(request: Request) -> Response:
    backend = backend_of(request)
    body = await read_body(request, UpdateThread)
    state = await backend.update(request.path_params["thread_id"], body)
    return json_response(backend.options(state.thread_id).answer(state.settings, state.thread_id))


async def rewind(request: Request) -> Response:
    backend = backend_of(request)
    body = await read_body(request, RewindThread)
    thread_id = backend.thread_id(request.path_params["thread_id"])
    ref = str(body.before_turn)
    done = await rewind_before(backend.service, thread_id, ref, files=body.files)
    restored = done.files if isinstance(done.files, FilesRestore) else None
    return json_response(
        RewindDone(
            thread_id=thread_id,
            seq=done.seq,
            turn_id=done.turn.turn_id,
            turn_number=done.number,
            hidden=done.hidden,
            files=restored,
            files_note=_note(restored),
        )
    )


def _note(restored: FilesRestore | None) -> str | None:
    """That ``bash``'s changes are not tracked, for a rewind or undo that
    put files back."""
    return UNTRACKED_NOTE if restored is not None else None


async def undo_rewind(request: Request) -> Response:
    backend = backend_of(request)
    await read_body(request, NoBody)
    thread_id = backend.thread_id(request.path_params["thread_id"])
    undone = await undo_latest_rewind(backend.service, thread_id)
    restored = undone.undo_files if isinstance(undone.undo_files, FilesRestore) else None
    return json_response(
        RewindUndone(
            thread_id=thread_id,
            rewind_seq=undone.seq,
            restored=len(undone.hidden_turn_ids),
            files=restored,
            files_note=_note(restored),
        )
    )


async def fork(request: Request) -> Response:
    backend = backend_of(request)
    body = await read_body(request, Fork)
    if body.at_seq is not None and body.at_turn is not None:
        raise ApiError(400, "invalid_body", "give at_seq or at_turn, not both", "at_turn")
    thread_id = backend.thread_id(request.path_params["thread_id"])
    at_turn = None
    if body.at_turn is not None:
        at_turn, _ = find_turn(await backend.state(thread_id), str(body.at_turn))
    new, seq = await fork_at(backend.service, thread_id, at_seq=body.at_seq, at_turn=at_turn)
    return json_response(Forked(thread_id=new, source_thread_id=thread_id, source_seq=seq), 201)


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
    ]
