"""The turn endpoints: start (202, the turn runs in the background and is
followed on the event stream), get, steer, interrupt, and the answers to
approvals and questions.

Attachments come in the body as base64 and are written under
``<home>/uploads/<thread>/`` before the turn starts, so the turn's
``user_message`` names a file the server owns; a client never names a
path on the server. Starting the turn keeps their bytes as side files of
the thread (``Attachment.ref``), which is what requests send from then on.
A refused turn (blank, an attachment that cannot be sent) removes them
again. A W3C ``traceparent`` header makes the turn's
span a child of the caller's, when tracing is on (:mod:`kun.observe.propagation`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import anyio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from kun.app.answers import ApprovalAnswered, Steered, TurnStarted, UserInputAnswered
from kun.contracts.items import Attachment
from kun.ids import new_id
from kun.observe.propagation import caller_trace
from kun.server.bodies import (
    AnswerApproval,
    AnswerUserInput,
    Interrupt,
    StartTurn,
    Steer,
    Upload,
    read_body,
)
from kun.server.threads import backend_of, json_response

__all__ = ["turn_routes"]

UPLOADS = "uploads"
RECONCILE_WAIT_SECONDS = 30.0
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


async def start_turn(request: Request) -> Response:
    backend = backend_of(request)
    body = await read_body(request, StartTurn)
    state = await backend.state(request.path_params["thread_id"])
    thread_id = state.thread_id
    saved = await _save(backend.home / UPLOADS / thread_id, body.attachments)
    options = backend.options(thread_id)
    try:
        with caller_trace(request.headers):
            turn_id = await backend.service.start_turn(
                thread_id,
                body.text,
                disable_user_input=body.disable_user_input,
                plan_mode=body.plan_mode,
                attachments=saved,
                model=backend.model_for(state.settings),
                limits=options.limits,
                reasoning_effort=options.reasoning_effort,
            )
    except BaseException:
        await _remove(saved)
        raise
    return json_response(TurnStarted(thread_id=thread_id, turn_id=turn_id), 202)


async def _save(folder: Path, uploads: tuple[Upload, ...]) -> list[Attachment]:
    if not uploads:
        return []

    def write() -> list[Attachment]:
        folder.mkdir(parents=True, exist_ok=True)
        saved = []
        for upload in uploads:
            name = _UNSAFE.sub("_", upload.name).lstrip(".") or "attachment"
            path = folder / f"{new_id('att')}-{name}"
            path.write_bytes(upload.data)
            saved.append(
                Attachment(
                    name=upload.name,
                    mime_type=upload.mime_type,
                    path=str(path),
                    size_bytes=len(upload.data),
                )
            )
        return saved

    return await anyio.to_thread.run_sync(write)


async def _remove(saved: list[Attachment]) -> None:
    for attachment in saved:
        if attachment.path is not None:
            await anyio.Path(attachment.path).unlink(missing_ok=True)


async def get_turn(request: Request) -> Response:
    _, turn = await backend_of(request).turn(
        request.path_params["thread_id"], request.path_params["turn_id"]
    )
    return json_response(turn)


async def steer(request: Request) -> Response:
    backend = backend_of(request)
    body = await read_body(request, Steer)
    thread_id, turn = await backend.turn(
        request.path_params["thread_id"], request.path_params["turn_id"]
    )
    await backend.service.steer_turn(thread_id, turn.turn_id, body.text)
    return json_response(Steered(thread_id=thread_id, turn_id=turn.turn_id, queued=True), 202)


async def interrupt(request: Request) -> Response:
    """Stop the running turn and record ``turn_aborted``; answers the
    turn as the log then has it."""
    backend = backend_of(request)
    body = await read_body(request, Interrupt)
    thread_id, turn = await backend.turn(
        request.path_params["thread_id"], request.path_params["turn_id"]
    )
    await backend.service.interrupt_turn(thread_id, turn.turn_id, discard=body.discard)
    _, settled = await backend.turn(thread_id, turn.turn_id)
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
    approval_id = request.path_params["approval_id"]
    await backend_of(request).service.answer_approval(approval_id, body.decision, body.reason)
    return json_response(ApprovalAnswered(approval_id=approval_id, decision=body.decision))


async def answer_user_input(request: Request) -> Response:
    body = await read_body(request, AnswerUserInput)
    await _reconciled(request)
    request_id = request.path_params["request_id"]
    await backend_of(request).service.answer_user_input(request_id, body.answer)
    status: Literal["answered", "cancelled"] = (
        "answered" if body.answer is not None else "cancelled"
    )
    return json_response(UserInputAnswered(request_id=request_id, status=status))


def turn_routes() -> list[BaseRoute]:
    turns = "/v1/threads/{thread_id}/turns"
    return [
        Route(turns, start_turn, methods=["POST"]),
        Route(f"{turns}/{{turn_id}}", get_turn, methods=["GET"]),
        Route(f"{turns}/{{turn_id}}/steer", steer, methods=["POST"]),
        Route(f"{turns}/{{turn_id}}/interrupt", interrupt, methods=["POST"]),
        Route("/v1/approvals/{approval_id}", answer_approval, methods=["POST"]),
        Route("/v1/user-inputs/{request_id}", answer_user_input, methods=["POST"]),
    ]
