"""The HTTP adapter of :class:`kun.app.interface.Kun`: kun's threads held by a
running ``kun serve``, over httpx, async. Every request is described in
:mod:`kun.client.routes`; answers are decoded straight into their Structs."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import httpx

from kun.app import answers as a
from kun.app.listing import ThreadSummary
from kun.app.requests import (
    AnswerApproval,
    CreateThread,
    ReplayThread,
    StartTurn,
    UpdateThread,
    Upload,
)
from kun.client.errors import not_kun, refusal, transport_failures
from kun.client.feed import AsyncFeed, Position, Retry, decoded
from kun.client.routes import ALL_EVENTS, Call, Calls
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
from kun.contracts.events import Event
from kun.contracts.threads import AllowRule, GoalStatus
from kun.domain.state import ThreadState, TurnState
from kun.model.sse import SSEParser

__all__ = ["AsyncKunClient"]

T = TypeVar("T")

SLOW = httpx.Timeout(DEFAULT_TIMEOUT, read=None)
"""Export and import: the server writes or checks a whole bundle before it
answers, which takes as long as the bundle is large."""


class AsyncKunClient:
    """kun's API, async: ``async with AsyncKunClient(url, token=...) as kun``.

    ``timeout``: seconds for a request (a stream's read waits longer, an
    export or import as long as it takes); ``transport``: httpx's, for
    tests and proxies; ``retry``: how a dropped event stream is resumed."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: Retry | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or Retry()
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=headers(token), timeout=timeout, transport=transport
        )

    async def __aenter__(self) -> AsyncKunClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _do(self, call: Call[T]) -> T:
        with transport_failures(self.base_url):
            response = await self._http.request(call.route.method, call.path, **request_args(call))
        return answer(call, response)

    # -- threads ----------------------------------------------------------
    async def create_thread(self, request: CreateThread | None = None) -> a.ThreadOptions:
        return await self._do(Calls.create_thread(request or CreateThread()))

    async def update_thread(self, thread: str, request: UpdateThread) -> a.ThreadOptions:
        return await self._do(Calls.update_thread(thread, request))

    async def threads(
        self, *, limit: int | None = None, cursor: str | None = None, include_hidden: bool = False
    ) -> a.ThreadPage:
        return await self._do(Calls.threads(limit, cursor, include_hidden))

    async def all_threads(
        self, *, include_hidden: bool = False, page: int | None = None
    ) -> AsyncIterator[ThreadSummary]:
        """Every thread, newest activity first, a page at a time."""
        cursor: str | None = None
        while True:
            found = await self.threads(limit=page, cursor=cursor, include_hidden=include_hidden)
            for summary in found.threads:
                yield summary
            if found.next_cursor is None:
                return
            cursor = found.next_cursor

    async def thread(self, thread: str) -> ThreadState:
        return await self._do(Calls.thread(thread))

    # -- turns --------------------------------------------------------------
    async def start_turn(self, thread: str, request: StartTurn) -> a.TurnStarted:
        """Attachments are :class:`~kun.app.requests.Upload` s (:meth:`attach`
        reads one from a local file)."""
        return await self._do(Calls.start_turn(thread, request))

    @staticmethod
    async def attach(path: Path) -> Upload:
        """The file at ``path`` as an attachment of a turn."""
        return upload(path, await anyio.Path(path).read_bytes())

    async def turn(self, thread: str, turn_id: str) -> TurnState:
        return await self._do(Calls.turn(thread, turn_id))

    async def wait_turn(self, thread: str, turn_id: str, *, poll: float = 0.1) -> TurnState:
        """The turn once it has settled, asked every ``poll`` seconds (bound
        the wait with ``anyio.fail_after``)."""
        while True:
            turn = await self.turn(thread, turn_id)
            if turn.status in SETTLED:
                return turn
            await anyio.sleep(poll)

    async def steer(self, thread: str, turn_id: str, text: str) -> a.Steered:
        return await self._do(Calls.steer(thread, turn_id, text))

    async def interrupt(self, thread: str, turn_id: str, *, discard: bool = False) -> TurnState:
        return await self._do(Calls.interrupt(thread, turn_id, discard))

    async def answer_approval(
        self,
        approval_id: str,
        decision: Literal["approved", "denied"],
        reason: str | None = None,
        *,
        always: AllowRule | None = None,
    ) -> a.ApprovalAnswered:
        body = AnswerApproval(decision=decision, reason=reason, always=always)
        return await self._do(Calls.answer_approval(approval_id, body))

    async def answer_user_input(self, request_id: str, answer: str | None) -> a.UserInputAnswered:
        return await self._do(Calls.answer_user_input(request_id, answer))

    @asynccontextmanager
    async def follow(
        self, thread: str, *, after: int = 0, previews: bool = False
    ) -> AsyncIterator[AsyncFeed]:
        """The thread's events after seq ``after``, then live, resumed on
        its own when the connection drops (:mod:`kun.client.feed`)."""
        async with AsyncExitStack() as stack:
            feed = AsyncFeed(
                self._http, Position(self.base_url, thread, after, previews), self.retry, stack
            )
            with transport_failures(self.base_url):
                await feed.open()
            yield feed

    @asynccontextmanager
    async def follow_all(self) -> AsyncIterator[AsyncIterator[Event]]:
        """Every thread's live events (``GET /v1/events``; each names its
        thread): no backlog and no resume point (seqs are per thread), so
        after a drop follow it again and catch each thread up with
        :meth:`follow` from the last seq it saw."""
        with transport_failures(self.base_url):
            request = self._http.stream("GET", ALL_EVENTS.path, timeout=SLOW)
            async with request as response:
                if response.status_code != 200:
                    await response.aread()
                    raise refusal(response)
                yield _firehose(response)

    # -- reshaping ----------------------------------------------------------
    async def rewind(
        self, thread: str, before_turn: str | int, *, files: bool = False
    ) -> a.RewindDone:
        return await self._do(Calls.rewind(thread, before_turn, files))

    async def undo_rewind(self, thread: str) -> a.RewindUndone:
        return await self._do(Calls.undo_rewind(thread))

    async def fork(
        self, thread: str, *, at_seq: int | None = None, at_turn: str | int | None = None
    ) -> a.Forked:
        return await self._do(Calls.fork(thread, at_seq, at_turn))

    async def compact(self, thread: str) -> a.CompactionStarted:
        return await self._do(Calls.compact(thread))

    # -- reads --------------------------------------------------------------
    async def usage(self, *threads: str) -> a.UsageReport:
        return await self._do(Calls.usage(threads))

    async def transcript(
        self,
        thread: str,
        *,
        hidden: bool = False,
        reasoning: bool = False,
        until_seq: int | None = None,
    ) -> str:
        return await self._do(Calls.transcript(thread, hidden, reasoning, until_seq))

    async def log(self, thread: str) -> bytes:
        return await self._do(Calls.log(thread))

    async def resolve_thread(self, thread: str) -> str:
        return (await self.thread(thread)).thread_id

    async def replay(
        self, thread: str, request: ReplayThread
    ) -> AsyncGenerator[bytes | a.ReplayNote, None]:
        """The thread's log, fetched, replayed here: every flag and note as
        on the server's machine (:func:`kun.app.replaying.replayed_copy`)."""
        from kun.app.replaying import replayed_copy

        thread_id = await self.resolve_thread(thread)
        log = await self.log(thread_id)
        async with aclosing(replayed_copy(thread_id, log, request)) as pieces:
            async for piece in pieces:
                yield piece

    async def openapi(self) -> dict[str, Any]:
        """The server's OpenAPI document."""
        return await self._do(Calls.openapi())

    # -- moving threads -----------------------------------------------------
    async def export_thread(
        self, thread: str, out: Path, *, compress: bool = True, force: bool = False
    ) -> a.Exported:
        """Download the bundle to ``out``, streamed; ``out`` appears only
        once whole (an ``out`` that exists is refused unless ``force``)."""
        export_refused(out, force)
        call = Calls.export(thread, compressed(out, compress))
        part = partial(out)
        try:
            with transport_failures(self.base_url):
                request = self._http.stream("GET", call.path, params=call.params, timeout=SLOW)
                async with request as response:
                    if response.status_code >= 400:
                        await response.aread()
                        answer(call, response)
                    if "x-kun-thread" not in response.headers:
                        raise not_kun(response)
                    async with await anyio.open_file(part, "wb") as file:
                        async for chunk in response.aiter_bytes(CHUNK):
                            await file.write(chunk)
            await anyio.Path(part).rename(out)
        finally:
            await anyio.Path(part).unlink(missing_ok=True)
        return exported(response)

    async def import_thread(
        self,
        path: Path,
        *,
        source: Literal["kun", "codex", "claude-code"] = "kun",
        as_id: str | None = None,
        replace: bool = False,
        workspace: Path | None = None,
    ) -> a.ImportDone:
        """Upload ``path``, streamed with its Content-Length: a bundle, or a
        ``codex`` or ``claude-code`` session; ``workspace``: a folder on the
        server's machine where the thread's new turns run."""
        where = None if workspace is None else str(workspace)
        call = Calls.import_thread(path.name, source, as_id, replace, where)
        size = (await anyio.Path(path).stat()).st_size
        with transport_failures(self.base_url):
            response = await self._http.post(
                call.path,
                params=call.params,
                content=_chunks(path),
                headers={"Content-Length": str(size)},
                timeout=SLOW,
            )
        return answer(call, response)

    # -- goals --------------------------------------------------------------
    async def set_goal(
        self, thread: str, objective: str, *, token_budget: int | None = None
    ) -> a.GoalSet:
        return await self._do(Calls.set_goal(thread, objective, token_budget))

    async def change_goal(
        self,
        thread: str,
        *,
        status: GoalStatus | None = None,
        token_budget: int | None = None,
        clear_budget: bool = False,
        clear: bool = False,
    ) -> a.GoalSet:
        return await self._do(Calls.change_goal(thread, status, token_budget, clear_budget, clear))

    async def goal_resume(self, thread: str, after_turn: str) -> a.GoalResume:
        return await self._do(Calls.goal_resume(thread, after_turn))

    # -- clean-up -----------------------------------------------------------
    async def trash_thread(self, thread: str) -> a.Trashed:
        return await self._do(Calls.trash_thread(thread))

    async def trash(self) -> a.TrashPage:
        return await self._do(Calls.trash())

    async def restore_thread(self, entry: str, *, as_id: str | None = None) -> a.Restored:
        return await self._do(Calls.restore_thread(entry, as_id))

    async def collect(self, thread: str, *, confirm: bool = False) -> a.Collected:
        return await self._do(Calls.collect(thread, confirm))

    async def reconcile(self) -> a.Reconciled:
        return await self._do(Calls.reconcile())

    async def providers(self) -> a.Providers:
        return await self._do(Calls.providers())


async def _firehose(response: httpx.Response) -> AsyncIterator[Event]:
    parser = SSEParser()
    async for chunk in response.aiter_bytes():
        for message in parser.feed(chunk):
            event = decoded(message)
            if event is not None:
                yield event


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    async with await anyio.open_file(path, "rb") as file:
        while chunk := await file.read(CHUNK):
            yield chunk
