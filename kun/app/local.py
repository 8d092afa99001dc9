"""The in-process adapter of :class:`kun.app.interface.Kun`: kun's threads in
a home on this machine, through its store and its runtime (what ``kun
run`` and ``kun serve`` do with them).

It opens in two layers. The light one, opened by :func:`open_local`, is
the home's store and recorder and a service without a model: enough to
read (a thread, its transcript, usage and log, the thread list, the trash),
to follow a thread's events, and to rewind, fork, trash, collect and
reconcile, so a home without a ``kun.toml`` or an API key can still be
replayed. The heavy one (:class:`~kun.app.local_engine.Engine`: the
configuration, its trust rules, the runtime settings, the sandbox check,
the provider router and the tools) opens on the first call that runs or
configures a turn, with the configuration of that thread's workspace
(as ``kun run`` picks it), and shares the recorder, so what its turns
write reaches every follower. It lives in a task of the adapter's own and
closes, flushed, when :func:`open_local`'s block ends, whichever task
first needed it (``kun serve`` composes the engine up front,
:meth:`LocalKun.over`).

A turn another process on this machine runs is steered and interrupted on
that process's control socket (:mod:`kun.app.local_steering`), as ``kun
steer`` does.

Threads are named by id or by an unambiguous prefix of it
(:func:`~kun.app.lookup.resolve_thread_id`) in every method; errors are
kun's own, with the messages the CLI prints.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeAlias

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus

from kun.app.answers import (
    ApprovalAnswered,
    Collected,
    CompactionStarted,
    Exported,
    Forked,
    GoalResume,
    GoalSet,
    ImportDone,
    Providers,
    Reconciled,
    ReplayNote,
    Restored,
    RewindDone,
    RewindUndone,
    Steered,
    ThreadOptions,
    ThreadPage,
    Trashed,
    TrashPage,
    TurnStarted,
    UsageReport,
    UserInputAnswered,
    WaitingTurn,
)
from kun.app.forwarding import BROADCAST, Call, Forwarder, Reply, answer_of, call
from kun.app.interface import ImportSource
from kun.app.local_cleanup import collected, confirmed, trash_page
from kun.app.local_errors import TurnRunning, TurnUnreachable
from kun.app.local_goals import changed_goal
from kun.app.local_multitask import before_start
from kun.app.local_portable import install, write_bundle
from kun.app.local_reads import thread_page, transcript_text, usage_report
from kun.app.local_uploads import UPLOADS, remove_uploads, save_uploads
from kun.app.lookup import resolve_among, resolve_thread_id
from kun.app.overrides import RuntimeFlags
from kun.app.requests import CreateThread, ReplayThread, StartTurn, UpdateThread
from kun.app.stores import HomeOnly, open_store
from kun.contracts.events import Event, FilesRestore
from kun.contracts.threads import AllowRule, Goal, GoalStatus
from kun.domain.state import ThreadState, TurnState
from kun.domain.turnref import find_turn
from kun.errors import UserMistake
from kun.runtime.bus import Follower
from kun.runtime.checkpoints import UNTRACKED_NOTE
from kun.runtime.errors import AnswerConflict, TurnNotRunning, UnknownTurn
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.errors import ThreadLocked
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import lock_path, log_path, validate_thread_id

if TYPE_CHECKING:
    from kun.app.local_engine import Engine

__all__ = ["NOT_MINE", "EngineOpener", "LocalFeed", "LocalKun", "open_home", "open_local"]

NOT_MINE = object()
""":meth:`LocalKun.serve_call`'s answer to a broadcast about another
worker's approval or question."""
_FORWARD_ATTEMPTS = 3
"""How often a turn is tried here and at the thread's writer in turn (each
forwarded try finding the writer gone) before the lock's refusal stands."""


EngineOpener: TypeAlias = (
    "Callable[[EventRecorder, Path | None], AbstractAsyncContextManager[Engine]]"
)
"""Opens the heavy layer over the shared recorder, configured for the
workspace given (``None``: where kun runs)."""


class LocalKun:
    """kun's threads in ``home``, worked on here (see the module docstring)."""

    def __init__(
        self,
        home: Path,
        recorder: EventRecorder,
        service: TurnService,
        *,
        engine: Engine | None = None,
        open_engine: EngineOpener | None = None,
        task_group: TaskGroup | None = None,
    ) -> None:
        self.home = home
        self.recorder = recorder
        self._bare = service
        self._engine = engine
        self._open_engine = open_engine
        self._tg = task_group
        self._closing = anyio.Event()
        self._closed = anyio.Event()
        self._opening = anyio.Lock()
        self.forward: Forwarder | None = None
        """Where calls for a thread another worker writes go, on a shared
        store (:mod:`kun.app.forwarding`; ``kun serve`` sets it)."""

    @classmethod
    def over(cls, engine: Engine) -> LocalKun:
        """The adapter over an engine already open (``kun serve``'s, a test's)."""
        return cls(engine.home, engine.service.recorder, engine.service, engine=engine)

    @property
    def service(self) -> TurnService:
        """The service that writes here: the engine's once it is open."""
        return self._engine.service if self._engine is not None else self._bare

    @property
    def engine(self) -> Engine | None:
        """The heavy layer, when it is open."""
        return self._engine

    @property
    def on_home(self) -> bool:
        """Whether the threads are the home's files; else a database's
        (:mod:`kun.app.stores`), where what only a home has (the trash,
        imports, log files, another process's control socket) is refused
        with :class:`~kun.app.stores.HomeOnly`."""
        return isinstance(self.recorder.store, JsonlEventStore)

    def _home_only(self, what: str) -> None:
        if not self.on_home:
            raise HomeOnly(what)

    @property
    def config_source(self) -> str | None:
        """The ``kun.toml`` the engine runs with, once it is open (a session
        notes it when it is the thread's workspace's rather than the one here)."""
        return self._engine.config_source if self._engine is not None else None

    async def open_engine(self, workspace: Path | None = None) -> Engine:
        """The heavy layer, opened now if it is not (configured for
        ``workspace``: where the thread that needs it works). It lives in a
        task of its own, so whichever task first needs it, it is closed
        when the adapter is."""
        async with self._opening:
            if self._engine is None:
                if self._open_engine is None or self._tg is None:
                    raise RuntimeError("this LocalKun cannot run turns: it has no engine")
                self._engine = await self._tg.start(self._hold_engine, self._open_engine, workspace)
                self._bare.resumes.close()  # from now on the engine's service resumes goals
        return self._engine

    async def _hold_engine(
        self,
        opener: EngineOpener,
        workspace: Path | None,
        *,
        task_status: TaskStatus[Engine] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        started = False
        try:
            async with opener(self.recorder, workspace) as engine:
                task_status.started(engine)
                started = True
                await self._closing.wait()
        finally:
            if started:
                self._closed.set()

    async def aclose(self) -> None:
        """Close the engine, if it was opened, and wait until it is."""
        self._closing.set()
        if self._engine is not None and self._tg is not None:
            with anyio.CancelScope(shield=True):
                await self._closed.wait()

    async def _engine_of(self, thread_id: str) -> Engine:
        if self._engine is not None:
            return self._engine
        workspace = (await self.recorder.view(thread_id)).settings.workspace
        return await self.open_engine(Path(workspace) if workspace else None)

    # -- naming ---------------------------------------------------------------

    def thread_id(self, text: str) -> str:
        """``text`` as an existing thread's id, or the one thread whose id
        it starts (``kun threads`` shows the shortest unique prefix).
        ``InvalidThreadId`` before it touches the disk, then
        ``ThreadNotFound`` or ``AmbiguousThreadId``."""
        validate_thread_id(text)
        store = self.recorder.store
        if store.exists(text):
            return text
        if not self.on_home:
            return resolve_among(store.list_threads(), text)
        return resolve_thread_id(self.home, text)

    async def _state(self, text: str) -> ThreadState:
        if self._engine is not None:
            return await self._engine.state(self.thread_id(text))
        return await self.recorder.view(self.thread_id(text))

    async def _turn(self, text: str, turn_id: str) -> tuple[str, TurnState]:
        state = await self._state(text)
        turn = next((t for t in state.turns if t.turn_id == turn_id), None)
        if turn is None:
            raise UnknownTurn(state.thread_id, turn_id)
        return state.thread_id, turn

    # -- threads --------------------------------------------------------------

    async def create_thread(self, request: CreateThread) -> ThreadOptions:
        workspace = Path(request.workspace) if request.workspace else None
        engine = await self.open_engine(workspace)
        thread_id = await engine.create(request)
        settings = engine.service.state(thread_id).settings
        return engine.options(thread_id).answer(settings, thread_id)

    async def update_thread(self, thread: str, request: UpdateThread) -> ThreadOptions:
        thread_id = self.thread_id(thread)
        engine = await self._engine_of(thread_id)
        state = await engine.update(thread_id, request)
        return engine.options(state.thread_id).answer(state.settings, state.thread_id)

    async def threads(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        include_hidden: bool = False,
        query: str | None = None,
    ) -> ThreadPage:
        """A page of the threads, newest activity first; ``query``: only
        those whose title, workspace or id contains it, ignoring case."""
        if not self.on_home:
            return await anyio.to_thread.run_sync(
                partial(
                    self._store_page,
                    limit=limit,
                    cursor=cursor,
                    include_hidden=include_hidden,
                    query=query,
                )
            )
        return await anyio.to_thread.run_sync(
            partial(
                thread_page,
                self.home,
                limit=limit,
                cursor=cursor,
                include_hidden=include_hidden,
                query=query,
            )
        )

    def _store_page(
        self, *, limit: int | None, cursor: str | None, include_hidden: bool, query: str | None
    ) -> ThreadPage:
        from kun.app.local_reads import page_of
        from kun.app.store_reads import store_summaries

        store = self.recorder.store
        found = store_summaries(store, include_hidden=include_hidden)
        where = str(getattr(store, "where", store))
        return page_of(found, limit=limit, cursor=cursor, query=query, where=where)

    async def thread(self, thread: str) -> ThreadState:
        return await self._state(thread)

    # -- turns ----------------------------------------------------------------

    async def start_turn(self, thread: str, request: StartTurn) -> TurnStarted:
        """Attachments sent as bytes are written under
        ``<home>/uploads/<thread>/`` first (the turn keeps them as side
        files); a refused turn removes them again. ``multitask`` says what
        a turn sent while another runs does (:mod:`kun.app.local_multitask`,
        :mod:`kun.runtime.queue`). A thread another worker writes (a shared
        store) is started there."""
        thread_id = self.thread_id(thread)
        for _attempt in range(_FORWARD_ATTEMPTS):
            try:
                return await self._start_turn_here(thread_id, request)
            except ThreadLocked as exc:
                reply = await self._forwarded(exc, thread_id, call("start_turn", request=request))
            if reply is not None:
                return answer_of(reply, TurnStarted)
        return await self._start_turn_here(thread_id, request)

    async def _forwarded(self, exc: ThreadLocked, thread_id: str, request: Call) -> Reply | None:
        """The writer's reply to ``request``, ``None`` when it let go of the
        thread meanwhile (the caller tries here again); ``exc`` again
        without a forwarder. A writer that found the thread taken by yet
        another (``thread_locked``) counts as letting go."""
        if self.forward is None:
            raise exc
        reply = await self.forward.ask(thread_id, request)
        if reply is None or (reply.error is not None and reply.error.code == "thread_locked"):
            return None
        return reply

    async def _start_turn_here(self, thread_id: str, request: StartTurn) -> TurnStarted:
        engine = await self._engine_of(thread_id)
        state = await engine.state(thread_id)
        steered = await before_start(self, thread_id, state, request)
        if steered is not None:
            return steered
        await engine.check_sandbox(state.settings.approval_policy)
        saved = await save_uploads(self.home / UPLOADS / thread_id, request.attachments)
        options = engine.options(thread_id)
        workspace = state.settings.workspace
        held = self.forward is not None and not self.forward.serves(workspace)
        start = (
            partial(engine.service.enqueue_turn, hold=held)
            if request.multitask in ("enqueue", "interrupt") or held
            else engine.service.start_turn
        )
        try:
            started = await start(
                thread_id,
                request.text,
                disable_user_input=request.disable_user_input,
                plan_mode=request.plan_mode,
                attachments=saved,
                model=engine.model_for(state.settings),
                limits=options.limits,
                reasoning_effort=options.reasoning_effort,
            )
        except BaseException:
            await remove_uploads(saved)
            raise
        if held and self.forward is not None:
            await self.forward.wait(thread_id, workspace)
        turn_id, queued = started if isinstance(started, tuple) else (started, False)
        status: Literal["running", "queued"] = "queued" if queued else "running"
        return TurnStarted(thread_id=thread_id, turn_id=turn_id, status=status)

    async def turn(self, thread: str, turn_id: str) -> TurnState:
        """A queued turn that no live worker sharing the store can run says
        why (``waiting_for``)."""
        thread_id, turn = await self._turn(thread, turn_id)
        if turn.status == "queued" and self.forward is not None:
            workspace = (await self.recorder.view(thread_id)).settings.workspace
            why = await self.forward.unserved(workspace)
            if why is not None:
                fields = msgspec.structs.asdict(turn)
                return WaitingTurn(**fields, waiting_for=why)
        return turn

    async def wait_turn(self, thread: str, turn_id: str) -> TurnState:
        thread_id, turn = await self._turn(thread, turn_id)
        while not turn.settled:
            last = (await self.recorder.view(thread_id)).last_seq
            async with self.follow(thread_id, after=last) as feed:
                _, turn = await self._turn(thread_id, turn_id)
                if turn.settled:
                    break
                async for _event in feed:
                    _, turn = await self._turn(thread_id, turn_id)
                    if turn.settled:
                        break
        return turn

    def _elsewhere(self, thread_id: str, turn: TurnState) -> bool:
        """Whether the turn is open and another process would run it: this
        one runs nothing on the thread."""
        return not turn.settled and self.service.running_turn(thread_id) is None

    async def steer(self, thread: str, turn_id: str, text: str) -> Steered:
        """A turn another process on this machine runs is reached on its
        control socket (:mod:`kun.app.local_steering`)."""
        thread_id, turn = await self._turn(thread, turn_id)
        if self._elsewhere(thread_id, turn) and self.forward is not None:
            reply = await self._reach(thread_id, call("steer", turn_id=turn.turn_id, text=text))
            return answer_of(reply, Steered)
        if self._elsewhere(thread_id, turn):
            self._home_only("steering a turn another process runs")
            from kun.app.local_steering import STEER_THERE, reach
            from kun.runtime.control_channel import Steer as SteerRequest

            request = SteerRequest(text=text, turn_id=turn.turn_id)
            await reach(self.home, thread_id, turn.turn_id, request, STEER_THERE)
        else:
            await self.service.steer_turn(thread_id, turn.turn_id, text)
        return Steered(thread_id=thread_id, turn_id=turn.turn_id, queued=True)

    async def interrupt(self, thread: str, turn_id: str, *, discard: bool = False) -> TurnState:
        """As :meth:`steer`, for a turn another process runs."""
        thread_id, turn = await self._turn(thread, turn_id)
        if self._elsewhere(thread_id, turn) and self.forward is not None:
            asked = call("interrupt", turn_id=turn.turn_id, discard=discard)
            return answer_of(await self._reach(thread_id, asked), TurnState)
        if self._elsewhere(thread_id, turn):
            self._home_only("interrupting a turn another process runs")
            from kun.app.local_steering import INTERRUPT_THERE, reach
            from kun.runtime.control_channel import Interrupt as InterruptRequest

            request = InterruptRequest(discard=discard, turn_id=turn.turn_id)
            await reach(self.home, thread_id, turn.turn_id, request, INTERRUPT_THERE)
        else:
            await self.service.interrupt_turn(thread_id, turn.turn_id, discard=discard)
        return (await self._turn(thread_id, turn.turn_id))[1]

    async def answer_approval(
        self,
        approval_id: str,
        decision: Literal["approved", "denied"],
        reason: str | None = None,
        *,
        always: AllowRule | None = None,
    ) -> ApprovalAnswered:
        """``always`` (with ``approved``): the rule joins the thread's allow
        rules first, as the terminal's ``a`` answer does. An approval asked
        by a turn another worker runs is answered there."""
        try:
            return await self._answer_approval_here(approval_id, decision, reason, always=always)
        except AnswerConflict:
            if self.forward is None:
                raise
            request = call(
                "answer_approval",
                approval_id=approval_id,
                decision=decision,
                reason=reason,
                always=always,
            )
            reply = await self.forward.ask(BROADCAST, request)
            if reply is None:
                raise
        return answer_of(reply, ApprovalAnswered)

    async def _answer_approval_here(
        self,
        approval_id: str,
        decision: Literal["approved", "denied"],
        reason: str | None = None,
        *,
        always: AllowRule | None = None,
    ) -> ApprovalAnswered:
        service = self.service
        if always is not None and decision == "approved":
            thread_id, _ = service.approvals.owner(approval_id)
            settings = service.state(thread_id).settings
            if always not in settings.allow_rules:
                rules = (*settings.allow_rules, always)
                await service.update_thread(thread_id, always_allow=rules)
        await service.answer_approval(approval_id, decision, reason)
        return ApprovalAnswered(approval_id=approval_id, decision=decision)

    async def answer_user_input(self, request_id: str, answer: str | None) -> UserInputAnswered:
        """A question asked by a turn another worker runs is answered there."""
        try:
            return await self._answer_user_input_here(request_id, answer)
        except AnswerConflict:
            if self.forward is None:
                raise
            request = call("answer_user_input", request_id=request_id, answer=answer)
            reply = await self.forward.ask(BROADCAST, request)
            if reply is None:
                raise
        return answer_of(reply, UserInputAnswered)

    async def _answer_user_input_here(
        self, request_id: str, answer: str | None
    ) -> UserInputAnswered:
        await self.service.answer_user_input(request_id, answer)
        status: Literal["answered", "cancelled"] = "answered" if answer is not None else "cancelled"
        return UserInputAnswered(request_id=request_id, status=status)

    async def _reach(self, thread_id: str, request: Call) -> Reply:
        """The reply of the worker running the thread's open turn; nobody
        answering is a turn a worker that died left open."""
        assert self.forward is not None
        reply = await self.forward.ask(thread_id, request)
        if reply is None:
            raise TurnUnreachable(
                f"thread {thread_id}: the worker that ran its open turn is gone; "
                "the other workers settle it in a moment"
            )
        return reply

    async def serve_call(self, thread_id: str, request: Call) -> object:
        """Make a call another worker forwarded (:mod:`kun.app.forwarding`)
        as if it were made here, never forwarding it again;
        :data:`NOT_MINE` for a broadcast about an id this worker does not
        know."""
        args = {name: msgspec.json.decode(raw) for name, raw in request.args.items()}
        method = request.method
        if method == "start_turn":
            body = msgspec.json.decode(request.args["request"], type=StartTurn)
            return await self._start_turn_here(thread_id, body)
        if method in ("steer", "interrupt"):
            _, turn = await self._turn(thread_id, args["turn_id"])
            if self._elsewhere(thread_id, turn):
                raise TurnNotRunning(thread_id, turn.turn_id)
            if method == "steer":
                await self.service.steer_turn(thread_id, turn.turn_id, args["text"])
                return Steered(thread_id=thread_id, turn_id=turn.turn_id, queued=True)
            await self.service.interrupt_turn(thread_id, turn.turn_id, discard=args["discard"])
            return (await self._turn(thread_id, turn.turn_id))[1]
        try:
            if method == "answer_approval":
                always = msgspec.json.decode(request.args["always"], type=AllowRule | None)
                return await self._answer_approval_here(
                    args["approval_id"], args["decision"], args["reason"], always=always
                )
            if method == "answer_user_input":
                return await self._answer_user_input_here(args["request_id"], args["answer"])
        except AnswerConflict:
            return NOT_MINE
        raise UserMistake(f"a forwarded call kun does not know: {method}")

    def follow(
        self, thread: str, *, after: int = 0, previews: bool = False
    ) -> AbstractAsyncContextManager[LocalFeed]:
        return self._follow(thread, after, previews)

    @asynccontextmanager
    async def _follow(self, thread: str, after: int, previews: bool) -> AsyncIterator[LocalFeed]:
        follower = self.recorder.subscribe(self.thread_id(thread), after=after, live=previews)
        try:
            yield LocalFeed(follower)
        finally:
            await follower.aclose()

    # -- reshaping ------------------------------------------------------------

    async def rewind(self, thread: str, before_turn: str, *, files: bool = False) -> RewindDone:
        from kun.app.threadops import rewind_before

        thread_id = self.thread_id(thread)
        if files and not self.on_home:
            await self._workspace_here(thread_id, "rewinding files")
        done = await rewind_before(self.service, thread_id, before_turn, files=files)
        restored = done.files if isinstance(done.files, FilesRestore) else None
        return RewindDone(
            thread_id=thread_id,
            seq=done.seq,
            turn_id=done.turn.turn_id,
            turn_number=done.number,
            hidden=done.hidden,
            files=restored,
            files_note=UNTRACKED_NOTE if restored is not None else None,
        )

    async def _workspace_here(self, thread_id: str, what: str) -> None:
        """Refuse ``what`` for a database's thread whose workspace is not a
        folder on this machine (it ran elsewhere)."""
        workspace = (await self.recorder.view(thread_id)).settings.workspace
        if not workspace or not await anyio.Path(workspace).is_dir():
            raise HomeOnly(f"{what} of a thread whose workspace is not on this machine")

    async def undo_rewind(self, thread: str) -> RewindUndone:
        from kun.app.threadops import undo_latest_rewind

        thread_id = self.thread_id(thread)
        undone = await undo_latest_rewind(self.service, thread_id)
        restored = undone.undo_files if isinstance(undone.undo_files, FilesRestore) else None
        return RewindUndone(
            thread_id=thread_id,
            rewind_seq=undone.seq,
            restored=len(undone.hidden_turn_ids),
            files=restored,
            files_note=UNTRACKED_NOTE if restored is not None else None,
        )

    async def fork(
        self, thread: str, *, at_seq: int | None = None, at_turn: str | None = None
    ) -> Forked:
        from kun.app.threadops import fork_noting_cut

        thread_id = self.thread_id(thread)
        number = None
        if at_turn is not None:
            number, _ = find_turn(await self._state(thread_id), at_turn)
        new, seq, cut = await fork_noting_cut(
            self.service, thread_id, at_seq=at_seq, at_turn=number
        )
        return Forked(thread_id=new, source_thread_id=thread_id, source_seq=seq, cut=cut)

    async def compact(self, thread: str) -> CompactionStarted:
        from kun.runtime.compact_turn import NOTHING_TO_COMPACT

        thread_id = self.thread_id(thread)
        engine = await self._engine_of(thread_id)
        state = await engine.state(thread_id)
        turn_id = await engine.service.start_compaction(
            state.thread_id, model=engine.model_for(state.settings)
        )
        if turn_id is None:
            return CompactionStarted(
                thread_id=state.thread_id, turn_id=None, reason=NOTHING_TO_COMPACT
            )
        return CompactionStarted(thread_id=state.thread_id, turn_id=turn_id)

    # -- reads ----------------------------------------------------------------

    async def log_file(self, thread: str) -> tuple[str, Path]:
        """The thread's id and its log file, with everything recorded
        before this call written to it (a home's thread only)."""
        self._home_only("a thread's log file")
        thread_id = self.thread_id(thread)
        await self.recorder.flush(thread_id)
        return thread_id, log_path(self.home, thread_id)

    @asynccontextmanager
    async def _log_files(
        self, *threads: str, side_files: bool = False
    ) -> AsyncIterator[tuple[Path, list[tuple[str, Path]]]]:
        """The home the threads' logs are in, and each thread's id and log
        file, everything recorded so far written: the home's own, or copies
        of a database's in a scratch home (:mod:`kun.app.store_reads`),
        removed when the block ends."""
        if self.on_home:
            yield self.home, [await self.log_file(name) for name in threads]
            return
        from kun.app.store_reads import spool

        ids = [self.thread_id(name) for name in threads]
        for thread_id in ids:
            await self.recorder.flush(thread_id)
        scratch = Path(tempfile.mkdtemp(prefix="kun-spool-"))
        try:
            write = partial(spool, self.recorder.store, ids, scratch, side_files=side_files)
            await anyio.to_thread.run_sync(write)
            yield scratch, [(thread_id, log_path(scratch, thread_id)) for thread_id in ids]
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(shutil.rmtree, scratch, True)

    async def usage(self, *threads: str) -> UsageReport:
        if not 1 <= len(threads) <= 2:
            raise UserMistake("give one thread, or two to compare")
        async with self._log_files(*threads) as (_, logs):
            return await anyio.to_thread.run_sync(usage_report, logs)

    async def transcript(
        self,
        thread: str,
        *,
        hidden: bool = False,
        reasoning: bool = False,
        until_seq: int | None = None,
    ) -> str:
        async with self._log_files(thread) as (_, [(_, path)]):
            draw = partial(
                transcript_text, path, hidden=hidden, reasoning=reasoning, until_seq=until_seq
            )
            return await anyio.to_thread.run_sync(draw)

    async def resolve_thread(self, thread: str) -> str:
        return self.thread_id(thread)

    async def replay(
        self, thread: str, request: ReplayThread
    ) -> AsyncGenerator[bytes | ReplayNote, None]:
        from kun.app.replaying import replayed

        async with (
            self._log_files(thread) as (_, [(_, path)]),
            aclosing(replayed(path, request)) as pieces,
        ):
            async for piece in pieces:
                yield piece

    async def log(self, thread: str) -> bytes:
        if not self.on_home:
            from kun.app.store_reads import log_lines

            thread_id = self.thread_id(thread)
            await self.recorder.flush(thread_id)
            lines = partial(log_lines, self.recorder.store, thread_id)
            return await anyio.to_thread.run_sync(lambda: b"".join(lines()))
        _, path = await self.log_file(thread)
        return await anyio.Path(path).read_bytes()

    # -- moving threads -------------------------------------------------------

    async def export_thread(
        self, thread: str, out: Path, *, compress: bool = True, force: bool = False
    ) -> Exported:
        """``out`` ending in ``.tar`` is a plain tar whatever ``compress``
        says (:func:`~kun.app.local_portable.write_bundle`)."""
        async with self._log_files(thread, side_files=True) as (home, [(thread_id, _)]):
            write = partial(write_bundle, home, thread_id, out, compress=compress, force=force)
            return await anyio.to_thread.run_sync(write)

    async def import_thread(
        self,
        path: Path,
        *,
        source: ImportSource = "kun",
        as_id: str | None = None,
        replace: bool = False,
        workspace: Path | None = None,
    ) -> ImportDone:
        """``workspace``: where the imported thread's new turns run."""
        self._home_only("kun import")
        done = partial(
            install,
            self.home,
            path,
            source=source,
            as_id=as_id,
            replace=replace,
            workspace=workspace,
        )
        return await anyio.to_thread.run_sync(done)

    # -- goals ----------------------------------------------------------------

    async def set_goal(
        self, thread: str, objective: str, *, token_budget: int | None = None
    ) -> GoalSet:
        thread_id = self.thread_id(thread)
        goal = Goal(
            objective=objective, token_budget=token_budget, created_at=self.recorder.clock()
        )
        await self.service.update_thread(thread_id, goal=goal)
        return GoalSet(thread_id=thread_id, goal=goal)

    async def change_goal(
        self,
        thread: str,
        *,
        status: GoalStatus | None = None,
        token_budget: int | None = None,
        clear_budget: bool = False,
        clear: bool = False,
    ) -> GoalSet:
        """The moves of ``/goal`` (:mod:`kun.app.local_goals`); a change
        that changes nothing writes nothing."""
        state = await self._state(thread)
        goal = state.settings.goal
        changed = changed_goal(
            goal,
            status=status,
            token_budget=token_budget,
            clear_budget=clear_budget,
            clear=clear,
        )
        if changed != goal:
            await self.service.update_thread(state.thread_id, goal=changed)
        return GoalSet(thread_id=state.thread_id, goal=changed)

    async def goal_resume(self, thread: str, after_turn: str) -> GoalResume:
        """Read from this process's resumer (:mod:`kun.app.local_resume`)."""
        from kun.app.local_resume import goal_resume

        thread_id, turn = await self._turn(thread, after_turn)
        return goal_resume(self.service, thread_id, turn.turn_id)

    # -- clean-up -------------------------------------------------------------

    def _idle(self, thread_id: str) -> None:
        """Refuse a thread a turn runs in here (another process's is
        refused by its lock, :class:`~kun.store.errors.ThreadLocked`)."""
        running = self.service.running_turn(thread_id)
        if running is not None:
            raise TurnRunning(thread_id, running, lock_path(self.home, thread_id))

    async def trash_thread(self, thread: str) -> Trashed:
        from kun.app.trash import remove_thread

        self._home_only("the trash (kun rm)")
        thread_id = self.thread_id(thread)
        self._idle(thread_id)
        await self.recorder.flush(thread_id)
        where = await anyio.to_thread.run_sync(remove_thread, self.home, thread_id)
        return Trashed(thread_id=thread_id, entry=where.name)

    async def trash(self) -> TrashPage:
        self._home_only("the trash (kun trash)")
        return await anyio.to_thread.run_sync(trash_page, self.home)

    async def restore_thread(self, entry: str, *, as_id: str | None = None) -> Restored:
        """``entry``: a thread id (its most recent removal) or an entry of
        :meth:`trash` (its name in the trash, as ``kun trash`` lists it)."""
        from kun.app.trash import restore_thread

        self._home_only("the trash (kun restore)")
        thread_id = await anyio.to_thread.run_sync(restore_thread, self.home, entry, as_id)
        return Restored(thread_id=thread_id, entry=entry)

    async def collect(self, thread: str, *, confirm: bool = False) -> Collected:
        self._home_only("kun gc")
        thread_id = self.thread_id(thread)
        self._idle(thread_id)
        await self.recorder.flush(thread_id)
        if confirm:
            return await anyio.to_thread.run_sync(confirmed, self.home, thread_id)
        return await anyio.to_thread.run_sync(collected, self.home, thread_id)

    async def providers(self) -> Providers:
        """The engine's router's providers (an engine over one model client:
        none to choose from)."""
        engine = await self.open_engine()
        router = engine.router
        return Providers(providers=list(router.providers) if router is not None else [])

    async def reconcile(self) -> Reconciled:
        """Settle the turns processes that died left running; a turn left
        waiting for an answer is re-armed when the engine is open (it runs
        here until answered)."""
        from kun.runtime.reconcile import reconcile_orphaned_turns

        skipped: dict[str, str] = {}
        waiting: list[str] = []
        touched = await reconcile_orphaned_turns(self.service, skipped=skipped, waiting=waiting)
        if self._engine is not None:
            for thread_id in waiting:
                state = await self.recorder.view(thread_id)
                await self._engine.take_waiting(thread_id, state.settings)
        return Reconciled(reconciled=touched, skipped=skipped)


class LocalFeed:
    """A thread's follower on the recorder, as an
    :class:`~kun.app.interface.EventFeed`; :meth:`batch` takes what is
    waiting at once (the SSE route sends it as one write)."""

    def __init__(self, follower: Follower) -> None:
        self._follower = follower

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._follower

    async def batch(self, most: int) -> list[Event]:
        """Up to ``most`` events, waiting for the first; ``[]``: the feed ended."""
        return await self._follower.batch(most)


@asynccontextmanager
async def open_home(
    home: Path, open_engine: EngineOpener, *, store: str | None = None
) -> AsyncIterator[LocalKun]:
    """The adapter over ``home``: the light layer now, the engine by
    ``open_engine`` when a call first needs it; all closed, flushed, when
    the block ends. ``store``: the database that holds the threads
    (``None``: the home's files)."""
    async with (
        open_store(home, store) as store_opened,
        EventRecorder(store_opened) as recorder,
        anyio.create_task_group() as tg,
    ):
        kun = LocalKun(
            home, recorder, TurnService(recorder, tg), open_engine=open_engine, task_group=tg
        )
        try:
            yield kun
        finally:
            await kun.aclose()
            tg.cancel_scope.cancel()  # what the model-less service left (a goal's resume timer)


def open_local(
    home: Path,
    *,
    config: Path | None = None,
    flags: RuntimeFlags | None = None,
    store: str | None = None,
) -> AbstractAsyncContextManager[LocalKun]:
    """The adapter ``kun`` uses on this machine: ``config`` is the
    ``kun.toml`` named on the command line (``None``: the one the
    workspace's search finds, its trust rules applied), ``flags`` the
    runtime flags given (over its ``[runtime]``), ``store`` the database
    that holds the threads (``None``: the home's files)."""
    given = flags if flags is not None else RuntimeFlags()

    def engine(
        recorder: EventRecorder, workspace: Path | None
    ) -> AbstractAsyncContextManager[Engine]:
        from kun.app.local_engine import engine_from_config
        from kun.config import load_config

        loaded = load_config(config, home=home, workspace=workspace)
        return engine_from_config(home, loaded, given, recorder=recorder)

    return open_home(home, engine, store=store)
