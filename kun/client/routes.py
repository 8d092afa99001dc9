"""The requests both clients send, described once as data.

A :class:`Route` is one operation of ``kun serve`` (the method, the path
template, the body Struct it takes and the answer it gives), named by the
client method that sends it; :data:`ROUTES` lists them all, and a test
holds them to :data:`kun.server.openapi.OPERATIONS`, so the client cannot
send what the server does not describe. A :class:`Call` is one request of a
route, built by :class:`Calls` for :class:`~kun.client.KunClient` and
:class:`~kun.client.AsyncKunClient` alike, so the two cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import msgspec

from kun.app import answers as a
from kun.app import requests as r
from kun.domain.state import ThreadState, TurnState

__all__ = ["ROUTES", "Call", "Calls", "Route"]

T = TypeVar("T")
Params = list[tuple[str, str | int | float | bool | None]]


@dataclass(frozen=True)
class Route(Generic[T]):
    """``answer``: a Struct decoded from JSON, ``str`` (text), ``bytes``, or
    ``dict`` (a JSON document kun does not type)."""

    name: str
    method: str
    path: str
    body: type[msgspec.Struct] | None
    answer: type[T]

    def call(
        self, *args: str, body: msgspec.Struct | None = None, params: Params | None = None
    ) -> Call[T]:
        """The request with the path's ``{...}`` filled in order by ``args``
        (each quoted: a name holding ``/`` or ``?`` stays one segment)."""
        parts = iter(args)
        path = "/".join(
            quote(next(parts), safe="") if part.startswith("{") else part
            for part in self.path.split("/")
        )
        return Call(self, path, body, params or [])


@dataclass(frozen=True)
class Call(Generic[T]):
    route: Route[T]
    path: str
    body: msgspec.Struct | None
    params: Params


_T = "/v1/threads/{thread_id}"
_TURN = f"{_T}/turns/{{turn_id}}"

CREATE_THREAD = Route("create_thread", "POST", "/v1/threads", r.CreateThread, a.ThreadOptions)
THREADS = Route("threads", "GET", "/v1/threads", None, a.ThreadPage)
THREAD = Route("thread", "GET", _T, None, ThreadState)
UPDATE_THREAD = Route("update_thread", "PATCH", _T, r.UpdateThread, a.ThreadOptions)
START_TURN = Route("start_turn", "POST", f"{_T}/turns", r.StartTurn, a.TurnStarted)
TURN = Route("turn", "GET", _TURN, None, TurnState)
STEER = Route("steer", "POST", f"{_TURN}/steer", r.Steer, a.Steered)
INTERRUPT = Route("interrupt", "POST", f"{_TURN}/interrupt", r.Interrupt, TurnState)
REWIND = Route("rewind", "POST", f"{_T}/rewind", r.RewindThread, a.RewindDone)
UNDO_REWIND = Route("undo_rewind", "POST", f"{_T}/rewind/undo", r.NoBody, a.RewindUndone)
FORK = Route("fork", "POST", f"{_T}/fork", r.Fork, a.Forked)
COMPACT = Route("compact", "POST", f"{_T}/compact", r.NoBody, a.CompactionStarted)
ANSWER_APPROVAL = Route(
    "answer_approval", "POST", "/v1/approvals/{approval_id}", r.AnswerApproval, a.ApprovalAnswered
)
ANSWER_USER_INPUT = Route(
    "answer_user_input",
    "POST",
    "/v1/user-inputs/{request_id}",
    r.AnswerUserInput,
    a.UserInputAnswered,
)
THREAD_USAGE = Route("usage", "GET", f"{_T}/usage", None, a.UsageReport)
USAGE = Route("usage", "GET", "/v1/usage", None, a.UsageReport)
TRANSCRIPT = Route("transcript", "GET", f"{_T}/transcript", None, str)
LOG = Route("log", "GET", f"{_T}/log", None, bytes)
EXPORT = Route("export_thread", "GET", f"{_T}/export", None, a.Exported)
IMPORT = Route("import_thread", "POST", "/v1/threads/import", None, a.ImportDone)
EVENTS = Route("follow", "GET", f"{_T}/events", None, bytes)
ALL_EVENTS = Route("follow_all", "GET", "/v1/events", None, bytes)
SET_GOAL = Route("set_goal", "PUT", f"{_T}/goal", r.SetGoal, a.GoalSet)
CHANGE_GOAL = Route("change_goal", "PATCH", f"{_T}/goal", r.ChangeGoal, a.GoalSet)
CLEAR_GOAL = Route("change_goal", "DELETE", f"{_T}/goal", r.NoBody, a.GoalSet)
GOAL_RESUME = Route("goal_resume", "GET", f"{_TURN}/goal-resume", None, a.GoalResume)
TRASH_THREAD = Route("trash_thread", "DELETE", _T, r.NoBody, a.Trashed)
TRASH = Route("trash", "GET", "/v1/trash", None, a.TrashPage)
RESTORE = Route("restore_thread", "POST", "/v1/trash/{entry}/restore", r.RestoreThread, a.Restored)
COLLECT = Route("collect", "POST", f"{_T}/gc", r.Collect, a.Collected)
RECONCILE = Route("reconcile", "POST", "/v1/reconcile", r.NoBody, a.Reconciled)
PROVIDERS = Route("providers", "GET", "/v1/providers", None, a.Providers)
OPENAPI = Route("openapi", "GET", "/openapi.json", None, dict)

ROUTES: tuple[Route[Any], ...] = (
    CREATE_THREAD, THREADS, THREAD, UPDATE_THREAD, START_TURN, TURN, STEER, INTERRUPT, REWIND,
    UNDO_REWIND, FORK, COMPACT, ANSWER_APPROVAL, ANSWER_USER_INPUT, THREAD_USAGE, USAGE,
    TRANSCRIPT, LOG, EXPORT, IMPORT, EVENTS, ALL_EVENTS, SET_GOAL, CHANGE_GOAL, CLEAR_GOAL,
    GOAL_RESUME, TRASH_THREAD, TRASH, RESTORE, COLLECT, RECONCILE, PROVIDERS, OPENAPI,
)  # fmt: skip
"""Every operation but ``GET /docs`` (a page for a browser)."""


def _flag(value: bool) -> str:
    return "true" if value else "false"


class Calls:
    """The requests, built once for both clients."""

    @staticmethod
    def create_thread(request: r.CreateThread) -> Call[a.ThreadOptions]:
        return CREATE_THREAD.call(body=request)

    @staticmethod
    def threads(limit: int | None, cursor: str | None, include_hidden: bool) -> Call[a.ThreadPage]:
        params: Params = [] if limit is None else [("limit", str(limit))]
        if cursor is not None:
            params.append(("cursor", cursor))
        if include_hidden:
            params.append(("all", "true"))
        return THREADS.call(params=params)

    @staticmethod
    def thread(thread: str) -> Call[ThreadState]:
        return THREAD.call(thread)

    @staticmethod
    def update_thread(thread: str, request: r.UpdateThread) -> Call[a.ThreadOptions]:
        return UPDATE_THREAD.call(thread, body=request)

    @staticmethod
    def start_turn(thread: str, request: r.StartTurn) -> Call[a.TurnStarted]:
        return START_TURN.call(thread, body=request)

    @staticmethod
    def turn(thread: str, turn_id: str) -> Call[TurnState]:
        return TURN.call(thread, turn_id)

    @staticmethod
    def steer(thread: str, turn_id: str, text: str) -> Call[a.Steered]:
        return STEER.call(thread, turn_id, body=r.Steer(text=text))

    @staticmethod
    def interrupt(thread: str, turn_id: str, discard: bool) -> Call[TurnState]:
        return INTERRUPT.call(thread, turn_id, body=r.Interrupt(discard=discard))

    @staticmethod
    def rewind(thread: str, before_turn: str | int, files: bool) -> Call[a.RewindDone]:
        return REWIND.call(thread, body=r.RewindThread(before_turn=before_turn, files=files))

    @staticmethod
    def undo_rewind(thread: str) -> Call[a.RewindUndone]:
        return UNDO_REWIND.call(thread, body=r.NoBody())

    @staticmethod
    def fork(thread: str, at_seq: int | None, at_turn: str | int | None) -> Call[a.Forked]:
        return FORK.call(thread, body=r.Fork(at_seq=at_seq, at_turn=at_turn))

    @staticmethod
    def compact(thread: str) -> Call[a.CompactionStarted]:
        return COMPACT.call(thread, body=r.NoBody())

    @staticmethod
    def answer_approval(approval_id: str, body: r.AnswerApproval) -> Call[a.ApprovalAnswered]:
        return ANSWER_APPROVAL.call(approval_id, body=body)

    @staticmethod
    def answer_user_input(request_id: str, answer: str | None) -> Call[a.UserInputAnswered]:
        return ANSWER_USER_INPUT.call(request_id, body=r.AnswerUserInput(answer=answer))

    @staticmethod
    def usage(threads: tuple[str, ...]) -> Call[a.UsageReport]:
        """One thread: its own route; else the comparison, which refuses
        none or more than two as the server words it."""
        if len(threads) == 1:
            return THREAD_USAGE.call(threads[0])
        return USAGE.call(params=[("thread", t) for t in threads])

    @staticmethod
    def transcript(thread: str, hidden: bool, reasoning: bool, until_seq: int | None) -> Call[str]:
        params: Params = [("hidden", _flag(hidden)), ("reasoning", _flag(reasoning))]
        if until_seq is not None:
            params.append(("until_seq", str(until_seq)))
        return TRANSCRIPT.call(thread, params=params)

    @staticmethod
    def log(thread: str) -> Call[bytes]:
        return LOG.call(thread)

    @staticmethod
    def export(thread: str, compress: bool) -> Call[a.Exported]:
        return EXPORT.call(thread, params=[] if compress else [("compress", "false")])

    @staticmethod
    def import_thread(
        name: str, source: str, as_id: str | None, replace: bool, workspace: str | None
    ) -> Call[a.ImportDone]:
        params: Params = [("name", name), ("from", source)]
        if as_id is not None:
            params.append(("as", as_id))
        if replace:
            params.append(("replace", "1"))
        if workspace is not None:
            params.append(("workspace", workspace))
        return IMPORT.call(params=params)

    @staticmethod
    def set_goal(thread: str, objective: str, token_budget: int | None) -> Call[a.GoalSet]:
        return SET_GOAL.call(thread, body=r.SetGoal(objective=objective, token_budget=token_budget))

    @staticmethod
    def goal_resume(thread: str, after_turn: str) -> Call[a.GoalResume]:
        return GOAL_RESUME.call(thread, after_turn)

    @staticmethod
    def change_goal(
        thread: str,
        status: str | None,
        token_budget: int | None,
        clear_budget: bool,
        clear: bool,
    ) -> Call[a.GoalSet]:
        if clear:
            return CLEAR_GOAL.call(thread, body=r.NoBody())
        # A status the body does not take is the server's to refuse, in its words.
        change = r.ChangeGoal(
            status=status,  # type: ignore[arg-type]
            token_budget=token_budget,
            clear_budget=clear_budget,
        )
        return CHANGE_GOAL.call(thread, body=change)

    @staticmethod
    def trash_thread(thread: str) -> Call[a.Trashed]:
        return TRASH_THREAD.call(thread, body=r.NoBody())

    @staticmethod
    def trash() -> Call[a.TrashPage]:
        return TRASH.call()

    @staticmethod
    def restore_thread(entry: str, as_id: str | None) -> Call[a.Restored]:
        return RESTORE.call(entry, body=r.RestoreThread(as_id=as_id))

    @staticmethod
    def collect(thread: str, confirm: bool) -> Call[a.Collected]:
        return COLLECT.call(thread, body=r.Collect(confirm=confirm))

    @staticmethod
    def reconcile() -> Call[a.Reconciled]:
        return RECONCILE.call(body=r.NoBody())

    @staticmethod
    def providers() -> Call[a.Providers]:
        return PROVIDERS.call()

    @staticmethod
    def openapi() -> Call[dict[str, Any]]:
        return OPENAPI.call()
