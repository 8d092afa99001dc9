"""``kun --server URL run``: one turn on a running ``kun serve``, shown live
exactly as ``kun run`` shows a local one.

The turn is started over HTTP (``POST /v1/threads/{id}/turns``) and followed
on the thread's event stream (``GET /v1/threads/{id}/events``, SSE; with
previews of streamed text unless ``--json``). :class:`RemoteView` is
:class:`~kun.cli.terminal.LiveView` with its events read from that stream
and its answers (approvals, questions, interrupts) posted to the server, so
what is drawn, asked and answered is the same code as a local turn.

A dropped stream is resumed with ``Last-Event-ID`` (the last seq seen), which
the server answers with exactly the events after it: nothing is shown twice
or lost, however often the connection drops. ``--json`` writes each durable
event as the log stores it (:func:`kun.store.codec.encode_line`). Ctrl-C (or
SIGTERM, SIGHUP) interrupts the turn on the server and drops a question being
asked; the view then shows the turn's last events (the server records it as
aborted), for a few seconds at most; a second signal stops it at once.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, aclosing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import httpx
import msgspec

from kun.app.overrides import RuntimeFlags
from kun.cli.colors import use_color
from kun.cli.remote import Remote, explained
from kun.cli.runjson import QuietSink
from kun.cli.terminal import LiveView, PlainSink, Prompter, Reply, Sink
from kun.cli.tty import TtyPrompter, open_terminal, watch
from kun.client.legacy import ApiError, AsyncKunClient, refusal
from kun.contracts import events as ev
from kun.contracts.threads import AllowRule
from kun.domain.state import ThreadState
from kun.errors import UserMistake
from kun.model.sse import SSEEvent, SSEParser
from kun.store.codec import LineError, decode_line, encode_line

__all__ = ["RemoteRun", "RemoteView", "run_remote", "thread_settings"]

RECONNECTS = 5
"""Attempts in a row to resume a dropped stream before giving up."""
READ_TIMEOUT = 60.0
"""Seconds without a byte (the server sends a heartbeat every 15) before
the stream is taken for dead and resumed."""
DRAIN_SECONDS = 10.0
CONFLICT = 409


@dataclass(frozen=True)
class RemoteRun:
    prompt: str
    thread_id: str | None
    workspace: Path
    json: bool
    settings: dict[str, Any]
    """``provider``, ``model``, ``approval_policy``, ``reasoning_effort``,
    ``limits``: those given (a new thread's, or changes to ``thread_id``)."""
    plan_mode: bool = False


class RemoteView(LiveView):
    """A live view of a thread held by a server. It has no service: its
    events (:meth:`_events`), the thread's state (:meth:`_state`) and every
    answer go over HTTP. "Always" is not offered: the API sets no allow
    rules, so an approval is answered once."""

    no_always = "the server's API sets no allow rules"

    def __init__(
        self,
        client: AsyncKunClient,
        stream: httpx.AsyncClient,
        thread_id: str,
        sink: Sink,
        prompter: Prompter | None = None,
        out: BinaryIO | None = None,
    ) -> None:
        super().__init__(None, thread_id, sink, prompter)  # type: ignore[arg-type]
        self.client = client
        self.stream = stream
        self.out = out
        self.live = out is None
        self.seen = 0
        self._projection: ThreadState | None = None
        self._open: AsyncGenerator[ev.Event, None] | None = None
        self._first: httpx.Response | None = None

    async def follow(self, after: int, turn_id: str) -> None:
        try:
            await super().follow(after, turn_id)
        finally:
            if self._open is not None:
                await self._open.aclose()
                self._open = None

    def _events(self, after: int) -> AsyncIterator[ev.Event]:
        self.seen = max(self.seen, after)
        self._open = self._resumed()
        return self._open

    async def _resumed(self) -> AsyncGenerator[ev.Event, None]:
        """The stream from ``self.seen`` on, resumed where it dropped."""
        failures = 0
        resumed = False
        while True:
            try:
                async with aclosing(self._connect(resumed)) as events:
                    async for event in events:
                        failures = 0
                        yield event
                reason = "the server ended the stream"
            except httpx.TransportError as exc:
                reason = str(exc) or type(exc).__name__
            failures += 1
            resumed = True
            if failures > RECONNECTS:
                raise UserMistake(f"lost the event stream at seq {self.seen}: {reason}")
            await anyio.sleep(min(0.1 * 2**failures, 2.0))

    async def connect(self, after: int, stack: AsyncExitStack) -> None:
        """Open the stream (on ``stack``) before the turn starts: previews
        are a prefix of their durable delta only for a stream that was there
        when the item began, which is what lets the view
        (:class:`~kun.runtime.bus.LiveText`) show each character once."""
        self.seen = after
        response = await stack.enter_async_context(self._request(resumed=False))
        await _accepted(response)
        self._first = response

    async def next_turn_started(self, after: int, stack: AsyncExitStack) -> ev.TurnStarted:
        """Wait on the thread's stream (opened on ``stack``) for the next
        turn to start after seq ``after``: one another client started, or
        the server's own (a goal resumed)."""
        await self.connect(after, stack)
        events = self._resumed()
        stack.push_async_callback(events.aclose)
        async for event in events:
            if isinstance(event, ev.TurnStarted):
                return event
        raise UserMistake(f"lost the event stream of thread {self.thread_id}")

    def _request(self, *, resumed: bool) -> AbstractAsyncContextManager[httpx.Response]:
        """A resumed stream asks for no previews: those sent while away are
        lost, so later ones would not be a prefix of their durable delta.
        The durable deltas carry the text instead (at most a second apart)."""
        headers = {"Last-Event-ID": str(self.seen)} if self.seen else {}
        params = {"live": "1"} if self.live and not resumed else {}
        url = f"/v1/threads/{self.thread_id}/events"
        timeout = httpx.Timeout(10.0, read=READ_TIMEOUT)
        return self.stream.stream("GET", url, headers=headers, params=params, timeout=timeout)

    async def _connect(self, resumed: bool) -> AsyncGenerator[ev.Event, None]:
        """One connection's events: the one :meth:`connect` opened, or a new one."""
        first, self._first = self._first, None
        if first is not None:
            async for event in self._read(first):
                yield event
            return
        async with self._request(resumed=resumed) as response:
            await _accepted(response)
            async for event in self._read(response):
                yield event

    async def _read(self, response: httpx.Response) -> AsyncIterator[ev.Event]:
        parser = SSEParser()
        async for chunk in response.aiter_bytes():
            for message in parser.feed(chunk):
                event = _decoded(message)
                if event is None:
                    continue
                if event.seq:
                    self.seen = max(self.seen, event.seq)
                yield event

    async def show(self, event: ev.Event) -> None:
        if self.out is not None and event.seq:
            self.out.write(encode_line(event))
            self.out.flush()
        if isinstance(event, ev.TurnCompleted | ev.TurnFailed | ev.TurnAborted):
            raw = msgspec.json.encode(await self.client.thread(self.thread_id))
            self._projection = msgspec.json.decode(raw, type=ThreadState)
        await super().show(event)

    def _state(self) -> ThreadState:
        if self._projection is None:
            raise RuntimeError("the thread's state is read when its turn settles")
        return self._projection

    def _rule(self, event: ev.ApprovalRequested) -> AllowRule | None:
        return None

    async def _answer_approval(
        self, approval_id: str, decision: str, reason: str | None = None
    ) -> None:
        with _unless_conflict():
            await self.client.answer_approval(approval_id, decision, reason)

    async def _answer_question(self, request_id: str, answer: str | None) -> None:
        with _unless_conflict():
            await self.client.answer_user_input(request_id, answer)

    async def interrupt(self, turn_id: str | None) -> None:
        if turn_id is not None:
            with _unless_conflict():
                await self.client.interrupt(self.thread_id, turn_id)


def _decoded(message: SSEEvent) -> ev.Event | None:
    """A stream message as its event (a preview too: seq 0); kinds this kun
    does not know are skipped, as a tolerant replay skips them."""
    try:
        return decode_line(message.raw)
    except LineError:
        return None


async def _accepted(response: httpx.Response) -> None:
    if response.status_code != 200:
        await response.aread()
        raise refusal(response)


@contextmanager
def _unless_conflict() -> Iterator[None]:
    """Swallow a 409: another client answered first, or the turn has ended."""
    try:
        yield
    except ApiError as exc:
        if exc.status != CONFLICT:
            raise


async def run_remote(remote: Remote, run: RemoteRun) -> tuple[str, str, str]:
    """Run the turn on the server; (thread id, turn id, its status)."""
    terminal = open_terminal()
    with explained(remote):
        async with (
            remote.async_client() as client,
            httpx.AsyncClient(base_url=remote.url, headers=remote.headers()) as stream,
        ):
            thread_id, after = await _thread(client, run)
            prompter = TtyPrompter(terminal) if terminal is not None else None
            out = sys.stdout.buffer if run.json else None
            view = RemoteView(client, stream, thread_id, _sink(run.json), prompter, out)
            async with AsyncExitStack() as stack:
                await view.connect(after, stack)
                turn_id, status = await _drive(
                    view, after, run.prompt, unattended=terminal is None, plan_mode=run.plan_mode
                )
    if terminal is not None:
        terminal.close()
    return thread_id, turn_id, status


def _sink(as_json: bool) -> Sink:
    if as_json:
        return QuietSink(sys.stderr)
    return PlainSink(sys.stdout, spinner=sys.stdout.isatty(), color=use_color(sys.stdout))


async def _thread(client: AsyncKunClient, run: RemoteRun) -> tuple[str, int]:
    """The thread to run on (created, or changed as asked) and the seq the
    view starts after: a new thread's events all show with ``--json``."""
    if run.thread_id is None:
        workspace = str(run.workspace.resolve())
        thread_id = await client.create_thread(workspace=workspace, **run.settings)
        return thread_id, 0
    if run.settings:
        await client.update_thread(run.thread_id, **run.settings)
    last: int = (await client.thread(run.thread_id))["last_seq"]
    return run.thread_id, last


async def _drive(
    view: RemoteView, after: int, prompt: str, *, unattended: bool, plan_mode: bool = False
) -> tuple[str, str]:
    """Start the turn and show it. A signal interrupts it on the server and
    takes away a question being asked; the view goes on until the turn has
    ended (at most ``DRAIN_SECONDS``; a second signal stops it at once)."""
    started: list[str] = []
    signalled = anyio.Event()
    showing = anyio.CancelScope()
    asking = _Interruptible(view.prompter)
    view.prompter = asking if view.prompter is not None else None

    async def interrupt() -> None:
        await signalled.wait()
        view.note("interrupting the turn...", "warn")
        await view.interrupt(started[0])
        asking.cancel()
        await anyio.sleep(DRAIN_SECONDS)
        showing.cancel()

    async def on_signal(signum: int) -> None:
        if signalled.is_set():
            showing.cancel()
        signalled.set()

    async with anyio.create_task_group() as tg:
        await tg.start(watch, on_signal)
        turn_id = await view.client.start_turn(
            view.thread_id, prompt, disable_user_input=unattended, plan_mode=plan_mode
        )
        started.append(turn_id)
        tg.start_soon(interrupt)
        with showing:
            await view.follow(after, turn_id)
        tg.cancel_scope.cancel()
    turn = await view.client.turn(view.thread_id, turn_id)
    status: str = turn["status"]
    if showing.cancel_called:
        view.sink.line(f"turn {status}", "warn")
    return turn_id, status


class _Interruptible:
    """A prompter whose question a signal takes away: the turn is being
    interrupted, so the question is dropped (an empty answer: no) and the
    view goes on to show how the turn ended."""

    def __init__(self, prompter: Prompter | None) -> None:
        self.prompter = prompter
        self._scope: anyio.CancelScope | None = None
        self._cancelled = False

    async def prompt(self, message: str) -> Reply:
        if self.prompter is None or self._cancelled:
            return Reply("text", "")
        with anyio.CancelScope() as self._scope:
            return await self.prompter.prompt(message)
        return Reply("text", "")

    def cancel(self) -> None:
        self._cancelled = True
        if self._scope is not None:
            self._scope.cancel()


def thread_settings(
    flags: RuntimeFlags, *, provider: str | None, model: str | None
) -> dict[str, Any]:
    """What the command line gives a thread on the server (the API's
    thread settings): provider, model, approval policy, reasoning effort
    and limits, those given only."""
    limits = {
        "max_steps": flags.max_steps,
        "max_wall_seconds": flags.max_wall_seconds,
        "max_cost_usd": flags.max_cost_usd,
        "max_turn_tokens": flags.max_turn_tokens,
    }
    given = {
        "provider": provider,
        "model": model,
        "approval_policy": flags.approval_policy,
        "reasoning_effort": flags.reasoning_effort,
        "limits": {k: v for k, v in limits.items() if v is not None} or None,
    }
    return {k: v for k, v in given.items() if v is not None}


def run_over_server(
    remote: Remote,
    prompt: str,
    *,
    thread_id: str | None,
    as_json: bool,
    workspace: Path,
    provider: str | None,
    model: str | None,
    approval: str | None,
    config: Path | None,
    home: Path | None,
    plan_mode: bool = False,
    rebind: bool = False,
) -> None:
    """``kun --server URL run``: the thread's settings as given (the runtime
    flags become the thread's reasoning effort and limits on the server;
    ``rebind``: ``--workspace`` was given, for ``--thread`` the thread's
    folder from now on, on the server's machine), the closing status line
    on stderr, exit status 1 unless it completed."""
    import click

    from kun.cli.flags import runtime_flags
    from kun.cli.remote import local_only
    from kun.runtime.turn_input import check_prompt

    flags = runtime_flags(approval)
    local_only(config=config, home=home, system=flags.system_prompt)
    check_prompt(prompt)  # before a thread is created for it
    settings = thread_settings(flags, provider=provider, model=model)
    if rebind and thread_id is not None:
        settings["workspace"] = str(workspace.resolve())
    run = RemoteRun(prompt, thread_id, workspace, as_json, settings, plan_mode)
    thread, turn, status = anyio.run(run_remote, remote, run)
    click.echo(f"thread {thread} · turn {turn} {status}", err=True)
    if status != "completed":
        sys.exit(1)
