"""The turn endpoints: start (202, the turn runs in the background and is
followed on the event stream), get, steer, interrupt, and the answers to
approvals and questions (``always``: the allow rule joins the thread's
first), each one call of :class:`~kun.app.local.LocalKun`.

Attachments come in the body as base64 and are written under
``<home>/uploads/<thread>/`` before the turn starts, so the turn's
``user_message`` names a file the server owns; a client never names a
path on the server (:meth:`LocalKun.start_turn
<kun.app.local.LocalKun.start_turn>`). A W3C ``traceparent`` header makes
the turn's span a child of the caller's, when tracing is on
(:mod:`kun.observe.propagation`).
"""

from __future__ import annotations

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from kun.observe.propagation import caller_trace
from kun.server.bodies import (
    AnswerApproval,
    AnswerUserInput,
    Interrupt,
    StartTurn,
    Steer,
    read_body,
)
from kun.server.threads import json_response, kun_of

__all__ = ["turn_routes"]

RECONCILE_WAIT_SECONDS = 30.0


async def start_turn(request: Request) -> Response:
    body = await read_body(request, StartTurn)
    with caller_trace(request.headers):
        started = await kun_of(request).start_turn(request.path_params["thread_id"], body)
    return json_response(started, 202)


async def get_turn(request: Request) -> Response:
    turn = await kun_of(request).turn(
        request.path_params["thread_id"], request.path_params["turn_id"]
    )
    return json_response(turn)


async def steer(request: Request) -> Response:
    body = await read_body(request, Steer)
    steered = await kun_of(request).steer(
        request.path_params["thread_id"], request.path_params["turn_id"], body.text
    )
    return json_response(steered, 202)


async def interrupt(request: Request) -> Response:
    """Stop the running turn and record ``turn_aborted``; answers the
    turn as the log then has it."""
    body = await read_body(request, Interrupt)
    settled = await kun_of(request).interrupt(
        request.path_params["thread_id"], request.path_params["turn_id"], discard=body.discard
    )
    return json_response(settled)


async def _reconciled(request: Request) -> None:
    """Answers wait for the start-up reconciliation (bounded): a turn left
    waiting by a stopped kun is answerable once it is re-armed."""
    reconciled = getattr(request.app.state, "reconciled", None)
    if reconciled is not None:
        with anyio.move_on_after(RECONCILE_WAIT_SECONDS):
            await reconciled.wait()


async def answer_approval(request: Request) -> Response:
    body = await read_body(request, AnswerApproval)
    await _reconciled(request)
    answered = await kun_of(request).answer_approval(
        request.path_params["approval_id"], body.decision, body.reason, always=body.always
    )
    return json_response(answered)


async def answer_user_input(request: Request) -> Response:
    body = await read_body(request, AnswerUserInput)
    await _reconciled(request)
    answered = await kun_of(request).answer_user_input(
        request.path_params["request_id"], body.answer
    )
    return json_response(answered)


async def goal_resume(request: Request) -> Response:
    """Whether settling the turn scheduled a resume of the thread's goal,
    and where it stands (``kun --server URL run --goal`` waits on it)."""
    resume = await kun_of(request).goal_resume(
        request.path_params["thread_id"], request.path_params["turn_id"]
    )
    return json_response(resume)


def turn_routes() -> list[BaseRoute]:
    turns = "/v1/threads/{thread_id}/turns"
    return [
        Route(turns, start_turn, methods=["POST"]),
        Route(f"{turns}/{{turn_id}}", get_turn, methods=["GET"]),
        Route(f"{turns}/{{turn_id}}/steer", steer, methods=["POST"]),
        Route(f"{turns}/{{turn_id}}/interrupt", interrupt, methods=["POST"]),
        Route(f"{turns}/{{turn_id}}/goal-resume", goal_resume, methods=["GET"]),
        Route("/v1/approvals/{approval_id}", answer_approval, methods=["POST"]),
        Route("/v1/user-inputs/{request_id}", answer_user_input, methods=["POST"]),
    ]
