""":class:`KunClient`: the methods of :class:`~kun.client.AsyncKunClient`,
blocking, for scripts and notebooks. Both send the requests
:class:`kun.client.routes.Calls` describes, so the two cannot drift."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

import httpx

from kun.app import answers as a
from kun.app.listing import ThreadSummary
from kun.app.requests import AnswerApproval, CreateThread, StartTurn, UpdateThread, Upload
from kun.client.errors import not_kun, transport_failures
from kun.client.feed import Feed, Position, Retry
from kun.client.routes import Call, Calls
from kun.client.wire import (
    CHUNK,
    DEFAULT_TIMEOUT,
    SETTLED,
    answer,
    compressed,
    export_refused,
    exported,
    headers,
    partial,
    request_args,
    upload,
)
from kun.contracts.threads import AllowRule, GoalStatus
from kun.domain.state import ThreadState, TurnState

__all__ = ["KunClient"]

T = TypeVar("T")

SLOW = httpx.Timeout(DEFAULT_TIMEOUT, read=None)


class KunClient:
    """kun's API, blocking: ``with KunClient(url, token=...) as kun``. The
    methods and their arguments are :class:`~kun.client.AsyncKunClient`'s."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        retry: Retry | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or Retry()
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers(token), timeout=timeout, transport=transport
        )

    def __enter__(self) -> KunClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _do(self, call: Call[T]) -> T:
        with transport_failures(self.base_url):
            response = self._http.request(call.route.method, call.path, **request_args(call))
        return answer(call, response)

    def create_thread(self, request: CreateThread | None = None) -> a.ThreadOptions:
        return self._do(Calls.create_thread(request or CreateThread()))

    def update_thread(self, thread: str, request: UpdateThread) -> a.ThreadOptions:
        return self._do(Calls.update_thread(thread, request))

    def threads(
        self, *, limit: int | None = None, cursor: str | None = None, include_hidden: bool = False
    ) -> a.ThreadPage:
        return self._do(Calls.threads(limit, cursor, include_hidden))

    def all_threads(
        self, *, include_hidden: bool = False, page: int | None = None
    ) -> Iterator[ThreadSummary]:
        cursor: str | None = None
        while True:
            found = self.threads(limit=page, cursor=cursor, include_hidden=include_hidden)
            yield from found.threads
            if found.next_cursor is None:
                return
            cursor = found.next_cursor

    def thread(self, thread: str) -> ThreadState:
        return self._do(Calls.thread(thread))

    def start_turn(self, thread: str, request: StartTurn) -> a.TurnStarted:
        return self._do(Calls.start_turn(thread, request))

    @staticmethod
    def attach(path: Path) -> Upload:
        return upload(path, path.read_bytes())

    def turn(self, thread: str, turn_id: str) -> TurnState:
        return self._do(Calls.turn(thread, turn_id))

    def wait_turn(
        self, thread: str, turn_id: str, *, timeout: float | None = None, poll: float = 0.1
    ) -> TurnState:
        """The turn once it has settled (``TimeoutError`` after ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            turn = self.turn(thread, turn_id)
            if turn.status in SETTLED:
                return turn
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"turn {turn_id} is still {turn.status}")
            time.sleep(poll)

    def steer(self, thread: str, turn_id: str, text: str) -> a.Steered:
        return self._do(Calls.steer(thread, turn_id, text))

    def interrupt(self, thread: str, turn_id: str, *, discard: bool = False) -> TurnState:
        return self._do(Calls.interrupt(thread, turn_id, discard))

    def answer_approval(
        self,
        approval_id: str,
        decision: Literal["approved", "denied"],
        reason: str | None = None,
        *,
        always: AllowRule | None = None,
    ) -> a.ApprovalAnswered:
        body = AnswerApproval(decision=decision, reason=reason, always=always)
        return self._do(Calls.answer_approval(approval_id, body))

    def answer_user_input(self, request_id: str, answer: str | None) -> a.UserInputAnswered:
        return self._do(Calls.answer_user_input(request_id, answer))

    @contextmanager
    def follow(self, thread: str, *, after: int = 0, previews: bool = False) -> Iterator[Feed]:
        """``with kun.follow(thread) as feed: for event in feed: ...``"""
        with ExitStack() as stack:
            feed = Feed(
                self._http, Position(self.base_url, thread, after, previews), self.retry, stack
            )
            with transport_failures(self.base_url):
                feed.open()
            yield feed

    def rewind(self, thread: str, before_turn: str | int, *, files: bool = False) -> a.RewindDone:
        return self._do(Calls.rewind(thread, before_turn, files))

    def undo_rewind(self, thread: str) -> a.RewindUndone:
        return self._do(Calls.undo_rewind(thread))

    def fork(
        self, thread: str, *, at_seq: int | None = None, at_turn: str | int | None = None
    ) -> a.Forked:
        return self._do(Calls.fork(thread, at_seq, at_turn))

    def compact(self, thread: str) -> a.CompactionStarted:
        return self._do(Calls.compact(thread))

    def usage(self, *threads: str) -> a.UsageReport:
        return self._do(Calls.usage(threads))

    def transcript(
        self,
        thread: str,
        *,
        hidden: bool = False,
        reasoning: bool = False,
        until_seq: int | None = None,
    ) -> str:
        return self._do(Calls.transcript(thread, hidden, reasoning, until_seq))

    def log(self, thread: str) -> bytes:
        return self._do(Calls.log(thread))

    def openapi(self) -> dict[str, Any]:
        return self._do(Calls.openapi())

    def export_thread(
        self, thread: str, out: Path, *, compress: bool = True, force: bool = False
    ) -> a.Exported:
        export_refused(out, force)
        call = Calls.export(thread, compressed(out, compress))
        part = partial(out)
        try:
            with transport_failures(self.base_url):
                request = self._http.stream("GET", call.path, params=call.params, timeout=SLOW)
                with request as response:
                    if response.status_code >= 400:
                        response.read()
                        answer(call, response)
                    if "x-kun-thread" not in response.headers:
                        raise not_kun(response)
                    with open(part, "wb") as file:
                        for chunk in response.iter_bytes(CHUNK):
                            file.write(chunk)
            os.replace(part, out)
        finally:
            part.unlink(missing_ok=True)
        return exported(response)

    def import_thread(
        self,
        path: Path,
        *,
        source: Literal["kun", "codex", "claude-code"] = "kun",
        as_id: str | None = None,
        replace: bool = False,
        workspace: Path | None = None,
    ) -> a.ImportDone:
        where = None if workspace is None else str(workspace)
        call = Calls.import_thread(path.name, source, as_id, replace, where)
        with transport_failures(self.base_url):
            response = self._http.post(
                call.path,
                params=call.params,
                content=_chunks(path),
                headers={"Content-Length": str(path.stat().st_size)},
                timeout=SLOW,
            )
        return answer(call, response)

    def set_goal(
        self, thread: str, objective: str, *, token_budget: int | None = None
    ) -> a.GoalSet:
        return self._do(Calls.set_goal(thread, objective, token_budget))

    def change_goal(
        self,
        thread: str,
        *,
        status: GoalStatus | None = None,
        token_budget: int | None = None,
        clear_budget: bool = False,
        clear: bool = False,
    ) -> a.GoalSet:
        return self._do(Calls.change_goal(thread, status, token_budget, clear_budget, clear))

    def goal_resume(self, thread: str, after_turn: str) -> a.GoalResume:
        return self._do(Calls.goal_resume(thread, after_turn))

    def trash_thread(self, thread: str) -> a.Trashed:
        return self._do(Calls.trash_thread(thread))

    def trash(self) -> a.TrashPage:
        return self._do(Calls.trash())

    def restore_thread(self, entry: str, *, as_id: str | None = None) -> a.Restored:
        return self._do(Calls.restore_thread(entry, as_id))

    def collect(self, thread: str, *, confirm: bool = False) -> a.Collected:
        return self._do(Calls.collect(thread, confirm))

    def reconcile(self) -> a.Reconciled:
        return self._do(Calls.reconcile())

    def providers(self) -> a.Providers:
        return self._do(Calls.providers())


def _chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as file:
        while chunk := file.read(CHUNK):
            yield chunk
