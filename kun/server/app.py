"""The Starlette app of ``kun serve`` (SPEC §10).

The app owns one :class:`~kun.runtime.service.TurnService` (inside a
:class:`~kun.server.backend.Backend`) for its lifespan: ``compose`` opens it
when the app starts and closes it, flushed, when it stops. What the
handlers and the event streams share is on ``app.state``: ``kun`` (the
in-process adapter, :class:`~kun.app.local.LocalKun`, that every route
calls), ``backend``, ``service``, ``shutdown`` (an :class:`anyio.Event` set when the server
begins to stop, so open streams end cleanly) and ``listening`` (set once the
socket accepts; a bare ASGI host sets it at start-up).

Once listening, orphaned turns are reconciled in the background (SPEC §5),
and turns a stopped kun left waiting for an approval or an answer are
re-armed (:mod:`kun.runtime.rearm`); ``reconciled`` is set when that is
done, and answers wait for it, so an answer sent right after a restart
finds its turn waiting. Stopping (:func:`begin_shutdown`, which uvicorn's
shutdown calls before it waits for open connections, and the lifespan's
end) sets ``shutdown`` and interrupts every running turn, which the log
records as ``turn_aborted`` — except a turn waiting only for the user's
answer: it is left open, and the next start re-arms it (durable
suspension).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from kun.app.local import LocalKun
from kun.runtime.rearm import open_suspension
from kun.runtime.reconcile import reconcile_orphaned_turns
from kun.server.auth import BearerAuth
from kun.server.backend import Backend
from kun.server.cleanup import cleanup_routes
from kun.server.compact import compact_routes
from kun.server.errors import InternalErrors, exception_handlers
from kun.server.openapi import openapi_routes
from kun.server.origin import OriginGuard
from kun.server.portable import portable_routes
from kun.server.reads import read_routes
from kun.server.threads import thread_routes
from kun.server.turns import turn_routes
from kun.server.web import web_routes
from kun.store.port import SharedStore

__all__ = ["Compose", "begin_shutdown", "create_app"]

_log = logging.getLogger(__name__)

Compose = Callable[[], AbstractAsyncContextManager[Backend]]


def _stream_routes() -> list[BaseRoute]:
    """The event streams (:mod:`kun.server.stream`), when this kun has them."""
    try:
        from kun.server.stream import stream_routes
    except ImportError:
        return []
    routes: list[BaseRoute] = stream_routes()
    return routes


def create_app(
    compose: Compose,
    *,
    token: str | None = None,
    wait_listening: bool = False,
    workspace_roots: Sequence[str] = ("/",),
) -> Starlette:
    """The app over the backend ``compose`` opens. ``token``: every request
    needs it as a bearer token. ``wait_listening``: reconcile orphans only
    once the runner (:mod:`kun.server.runner`) says the socket is bound.
    On a store many workers share, this worker joins them
    (:mod:`kun.server.cluster`), serving the workspaces under
    ``workspace_roots``."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.shutdown = anyio.Event()
        app.state.listening = anyio.Event()
        app.state.reconciled = anyio.Event()
        if not wait_listening:
            app.state.listening.set()
        async with compose() as backend, anyio.create_task_group() as tg:
            app.state.backend = backend
            app.state.service = backend.service
            app.state.kun = LocalKun.over(backend)
            store = backend.service.recorder.store
            if isinstance(store, SharedStore):
                from kun.server.cluster import member

                await tg.start(member, app.state.kun, store, tuple(workspace_roots))
            tg.start_soon(_reconcile_once_listening, app)
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):
                    await begin_shutdown(app)
                tg.cancel_scope.cancel()

    middleware = [Middleware(InternalErrors), Middleware(OriginGuard, check_host=not token)]
    if token:
        middleware.append(Middleware(BearerAuth, token=token))
    app = Starlette(
        routes=[
            *thread_routes(),
            *turn_routes(),
            *compact_routes(),
            *cleanup_routes(),
            *read_routes(),
            *portable_routes(),
            *_stream_routes(),
            *openapi_routes(),
            *web_routes(),
        ],
        middleware=middleware,
        exception_handlers=exception_handlers(),  # type: ignore[arg-type]
        lifespan=lifespan,
    )
    app.router.redirect_slashes = False
    app.state.token_required = token is not None
    return app


async def _reconcile_once_listening(app: Starlette) -> None:
    await app.state.listening.wait()
    waiting: list[str] = []
    try:
        touched = await reconcile_orphaned_turns(app.state.service, waiting=waiting)
        if touched:
            _log.info(
                "settled orphaned turns in %d thread(s): %s", len(touched), ", ".join(touched)
            )
        for thread_id in waiting:
            await _rearm(app.state.backend, thread_id)
    except Exception:
        _log.exception("reconciling orphaned turns failed")
    finally:
        app.state.reconciled.set()


async def _rearm(backend: Backend, thread_id: str) -> None:
    """Re-arm a turn left waiting for an answer, on the thread's model."""
    try:
        state = await backend.service.recorder.view(thread_id)
        await backend.take_waiting(thread_id, state.settings)
    except Exception:
        _log.exception("re-arming the waiting turn of thread %s failed", thread_id)


async def begin_shutdown(app: Any) -> None:
    """Set ``shutdown``, cancel the pending goal resumes and interrupt every
    running turn (each recorded as ``turn_aborted``, its open items sealed);
    idempotent."""
    state = app.state
    shutdown = getattr(state, "shutdown", None)
    if shutdown is None:
        return
    shutdown.set()
    backend: Backend | None = getattr(state, "backend", None)
    if backend is None:
        return
    service = backend.service
    service.resumes.close()  # no goal resume may start a turn while stopping
    async with anyio.create_task_group() as tg:
        for thread_id in service.in_flight():
            turn_id = service.running_turn(thread_id)
            if turn_id is not None and open_suspension(service.state(thread_id)) is None:
                tg.start_soon(_interrupt, service, thread_id, turn_id)


async def _interrupt(service: Any, thread_id: str, turn_id: str) -> None:
    try:
        await service.interrupt_turn(thread_id, turn_id)
    except Exception:
        _log.exception("interrupting turn %s of thread %s at shutdown failed", turn_id, thread_id)
