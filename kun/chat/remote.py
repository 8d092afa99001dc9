"""The interactive session on a thread of a running ``kun serve``:
``kun --server URL``, ``kun --server URL -c``, ``kun --server URL resume T``.

The same prompt (:mod:`kun.chat.input`) and drawing (:mod:`kun.chat.view`)
as the local session; the turn runs on the server, so every action is an
API call (:mod:`kun.client`) and the turn is shown from the thread's event
stream by :class:`~kun.cli.remote_run.RemoteView`, which also posts the
answers to its approvals and questions. What the user sends starts a turn,
or steers the running one; Esc or Ctrl-C interrupts it on the server;
Ctrl-D or ``/quit`` leaves (interrupting a running turn first, as locally).
SIGTERM or SIGHUP (the terminal closed) leaves without interrupting: the
turn is the server's, and ``kun --server URL -c`` shows it again.

A thread whose last turn is still open on the server (running, or waiting
for an answer) is joined where it is: its events are shown from its start,
so a pending approval or question is asked here.

Only the commands that mean the same over the API are offered here:
``/help``, ``/quit``, ``/approval``, ``/model``, ``/title``, ``/new``.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import anyio
import httpx
from anyio.abc import TaskGroup

from kun.app.selection import parse_target
from kun.chat.input import ChatInput
from kun.chat.prompt_loop import PromptLoop
from kun.chat.view import ChatSink
from kun.cli.remote import Remote, explained
from kun.cli.remote_run import RemoteView
from kun.client.legacy import ApiError, AsyncKunClient
from kun.contracts import events as ev
from kun.contracts.threads import ApprovalPolicy
from kun.domain.transcript import plural
from kun.errors import KunError, UserMistake

__all__ = ["RemoteChat", "RemoteSetup", "open_remote_chat", "pick_remote_thread"]

_POLICIES: tuple[str, ...] = get_args(ApprovalPolicy)
_PAGES = 20
"""Pages of the server's thread list looked through for ``-c`` or a prefix."""
CONFLICT = 409


@dataclass(frozen=True)
class RemoteSetup:
    workspace: Path
    thread_id: str | None
    settings: dict[str, Any]
    """``provider``, ``model``, ``approval_policy`` given on the command
    line: a new thread's, or changes recorded on the resumed one."""


class RemoteChat(PromptLoop):
    """The session's loop over the API (see the module docstring)."""

    def __init__(
        self,
        remote: Remote,
        client: AsyncKunClient,
        stream: httpx.AsyncClient,
        setup: RemoteSetup,
        prompt: ChatInput,
        sink: ChatSink,
    ) -> None:
        self.remote = remote
        self.client = client
        self.stream = stream
        self.workspace = setup.workspace
        self.settings = dict(setup.settings)
        self.input = prompt
        self.sink = sink
        self.thread_id: str | None = None
        self.turn_id: str | None = None
        self.view: RemoteView | None = None
        self.thread: dict[str, Any] = {}
        self._closing = False
        self._tg: TaskGroup | None = None
        self._idle: anyio.CancelScope | None = None
        self._commands: dict[str, Callable[[str], Awaitable[None]]] = {
            "help": self._help,
            "quit": self._quit,
            "exit": self._quit,
            "approval": self._approval,
            "model": self._model,
            "title": self._title,
            "new": self._new,
        }
        if setup.thread_id is not None:
            self._switch(setup.thread_id)

    # -- the loop ---------------------------------------------------------------

    async def run(self) -> None:
        from kun.cli.tty import watch

        async with anyio.create_task_group() as tg:
            self._tg = tg
            await tg.start(watch, self._on_signal)
            if self.thread_id is not None:
                await self._refresh()
                if self.settings:
                    self.thread = await self.client.update_thread(self.thread_id, **self.settings)
                self._recap()
            self.greet(f"{self.remote.url} · {self._target()}", self._policy())
            await self._join_open_turn()
            await self.prompt_until_closed()
            tg.cancel_scope.cancel()

    async def _start(self, text: str) -> None:
        if self.thread_id is None:
            workspace = str(self.workspace)
            self._switch(await self.client.create_thread(workspace=workspace, **self.settings))
            self.settings = {}
            await self._refresh()
        assert self.thread_id is not None and self.view is not None and self._tg is not None
        self._stop_watching()
        after = (await self._refresh())["last_seq"]
        stack = AsyncExitStack()
        try:
            await self.view.connect(after, stack)
            self.turn_id = await self.client.start_turn(self.thread_id, text)
        except BaseException:
            await stack.aclose()
            raise
        self._tg.start_soon(self._follow, self.view, stack, after, self.turn_id)

    async def _join_open_turn(self) -> None:
        """Show the thread's open turn (running, or waiting for an answer
        on the server) from its start, so its question is asked here."""
        if self.thread_id is None or self.view is None or self._tg is None:
            return
        turns = self.thread.get("turns") or []
        last = turns[-1] if turns else None
        if last is None or last.get("status") not in ("queued", "running"):
            self._watch_soon()
            return
        self.say("this thread's last turn is still open on the server: joining it", "warn")
        after = int(last["started_seq"]) - 1
        stack = AsyncExitStack()
        await self.view.connect(after, stack)
        self.turn_id = last["turn_id"]
        self._tg.start_soon(self._follow, self.view, stack, after, last["turn_id"])

    async def _follow(
        self, view: RemoteView, stack: AsyncExitStack, after: int, turn_id: str
    ) -> None:
        try:
            async with stack:
                await view.follow(after, turn_id)
        except KunError as exc:
            self.say(str(exc), "error")
        finally:
            if self.turn_id == turn_id:
                self.turn_id = None
            self.input.refresh()
        if self.thread_id == view.thread_id:
            await self._refresh()
            self._watch_soon()

    def _watch_soon(self) -> None:
        """While no turn runs here, watch the thread for a turn started
        elsewhere (another client, or the server resuming a goal) and show
        it as this session's own."""
        if (
            self._closing
            or self.turn_id is not None
            or self.view is None
            or self._tg is None
            or not self.thread
        ):
            return
        self._stop_watching()
        self._tg.start_soon(self._watch_idle, self.view, int(self.thread["last_seq"]))

    def _stop_watching(self) -> None:
        idle, self._idle = self._idle, None
        if idle is not None:
            idle.cancel()

    async def _watch_idle(self, view: RemoteView, after: int) -> None:
        started: ev.TurnStarted | None = None
        with anyio.CancelScope() as scope:
            self._idle = scope
            watching = RemoteView(self.client, self.stream, view.thread_id, self.sink)
            try:
                async with AsyncExitStack() as stack:
                    started = await watching.next_turn_started(after, stack)
            except KunError as exc:
                self.say(str(exc), "error")
            finally:
                if self._idle is scope:
                    self._idle = None
        if started is None or started.turn_id is None:
            return
        if self.turn_id is not None or self.view is not view:
            return
        self.say("a turn started on the server (another client, or the goal): showing it", "dim")
        self.turn_id = turn_id = started.turn_id
        self.input.refresh()
        stack = AsyncExitStack()
        await view.connect(started.seq - 1, stack)
        await self._follow(view, stack, started.seq - 1, turn_id)

    async def _steer(self, thread_id: str, turn_id: str, text: str) -> None:
        try:
            await self.client.steer(thread_id, turn_id, text)
        except ApiError as exc:
            if exc.status != CONFLICT:
                raise
            self.say(f"(not steered: {exc.message})", "warn")
            return
        self.say("(steering: the model reads this at its next step)", "dim")

    async def _interrupt(self) -> None:
        if self.turn_id is not None and self.view is not None:
            self.say("interrupting the turn", "warn")
            await self.view.interrupt(self.turn_id)

    async def _on_signal(self, signum: int) -> None:
        """SIGINT interrupts the turn; SIGTERM and SIGHUP leave the session
        and the turn goes on on the server (see the module docstring)."""
        import signal

        if signum == signal.SIGINT:
            await self._interrupt()
            return
        if self.turn_id is not None and self.thread_id is not None:
            self.say(
                f"the turn goes on on the server: kun --server {self.remote.url} "
                f"resume {self.thread_id}",
                "warn",
            )
        self._closing = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    # -- the thread -------------------------------------------------------------

    def _switch(self, thread_id: str | None) -> None:
        self._stop_watching()
        self.thread_id = thread_id
        self.thread = {}
        self.view = None
        if thread_id is not None:
            self.view = RemoteView(self.client, self.stream, thread_id, self.sink, self.input)

    async def _refresh(self) -> dict[str, Any]:
        assert self.thread_id is not None
        self.thread = await self.client.thread(self.thread_id)
        workspace = self.thread.get("settings", {}).get("workspace")
        if workspace:
            self.workspace = Path(workspace)
        return self.thread

    def _recap(self) -> None:
        settings = self.thread.get("settings", {})
        turns = [t for t in self.thread.get("turns", []) if not t.get("hidden")]
        title = settings.get("title") or "(untitled)"
        self.say(f"resumed {self.thread_id} · {title} · {plural(len(turns), 'turn')}", "good")
        for item in turns[-1]["items"] if turns else []:
            if item.get("type") in ("user_message", "assistant_text"):
                first = str(item.get("text", "")).strip().split("\n", 1)[0][:200]
                self.say(f"> {first}" if item["type"] == "user_message" else first, "dim")

    def _policy(self) -> str:
        policy = self.thread.get("settings", {}).get("approval_policy")
        return str(policy or self.settings.get("approval_policy") or "the server's")

    def _target(self) -> str:
        settings = self.thread.get("settings") or self.settings
        provider, model = settings.get("provider"), settings.get("model")
        return f"{provider}/{model}" if provider and model else "the server's model"

    # -- commands ---------------------------------------------------------------

    async def _command(self, line: str) -> None:
        name, _, rest = line[1:].partition(" ")
        handler = self._commands.get(name.lower())
        if handler is None:
            offered = ", ".join(f"/{n}" for n in self._commands if n != "exit")
            instead = self._instead(name.lower(), rest.strip())
            self.say(f"/{name} is not offered over --server{instead} (here: {offered})", "error")
            return
        if self.turn_id is not None and handler not in (self._help, self._quit):
            self.say(f"/{name} waits until the turn ends (Esc interrupts it)", "warn")
            return
        await handler(rest.strip())

    def _instead(self, name: str, rest: str) -> str:
        """``: COMMAND``, the command that does what the session's ``/name``
        does locally, to paste (``""`` for a command kun does not have)."""
        thread = self.thread_id or "THREAD"
        server = ["kun", "--server", self.remote.url]
        args = {
            "rewind": ["rewind", thread, *(rest.split() or ["N"])],
            "undo-rewind": ["rewind", thread, "--undo"],
            "fork": ["fork", thread, *(["--at-turn", rest] if rest else [])],
            "compact": ["compact", thread],
            "usage": ["usage", thread],
            "threads": ["threads"],
            "plan": ["run", "--thread", thread, "--plan", "PROMPT"],
        }.get(name)
        if args is not None:
            return f"; instead: {shlex.join([*server, *args])}"
        if name == "goal":
            return (
                "; goals are not set over the API yet: on the server's machine, "
                f"{shlex.join(['kun', 'resume', thread])} opens this thread there"
            )
        return ""

    async def _help(self, rest: str) -> None:
        self.say("/help  these commands")
        self.say("/approval [POLICY]  the thread's approval policy")
        self.say("/model [PROVIDER/]MODEL  the thread's model (the server's providers)")
        self.say("/title TEXT  the thread's title")
        self.say("/new  a new thread on the next message")
        self.say("/quit  leave (a running turn is interrupted)")
        self.say(
            f"on the kun serve at {self.remote.url} · Enter sends · typing while a turn runs "
            "steers it · Esc interrupts · Ctrl-D leaves",
            "dim",
        )

    async def _quit(self, rest: str) -> None:
        self.close()

    async def _approval(self, rest: str) -> None:
        if not rest:
            self.say(f"approval {self._policy()} (choices: {', '.join(_POLICIES)})")
            return
        if rest not in _POLICIES:
            raise UserMistake(f"no approval policy {rest!r} (choices: {', '.join(_POLICIES)})")
        await self._change(approval_policy=rest)
        self.say(f"approval {rest}", "good")

    async def _model(self, rest: str) -> None:
        if not rest:
            self.say(f"model {self._target()}")
            return
        provider, model = parse_target(rest)
        changes = {"provider": provider, "model": model}
        await self._change(**{k: v for k, v in changes.items() if v is not None})
        self.say(f"model {self._target()}", "good")

    async def _title(self, rest: str) -> None:
        if not rest:
            self.say(f"title: {self.thread.get('settings', {}).get('title') or '(untitled)'}")
            return
        await self._change(title=rest)
        self.say(f"title: {rest}", "good")

    async def _new(self, rest: str) -> None:
        self._switch(None)
        self.say("a new thread starts with your next message", "good")

    async def _change(self, **changes: Any) -> None:
        if self.thread_id is None:
            self.settings.update(changes)
            return
        self.thread = await self.client.update_thread(self.thread_id, **changes)

    def _idle_toolbar(self) -> str:
        where = self.thread_id or "new thread"
        return f" {self.remote.url} · {self._target()} · approval {self._policy()} · {where}"


async def pick_remote_thread(client: AsyncKunClient, folder: str, wanted: str | None) -> str:
    """The server's thread to resume: ``wanted`` (an id or the start of
    one), or, without it, the latest thread of the workspace ``folder``
    (an absolute path)."""
    found: list[str] = []
    cursor: str | None = None
    for _ in range(_PAGES):
        page = await client.threads(limit=500, cursor=cursor)
        for row in page["threads"]:
            thread_id = str(row["thread_id"])
            if wanted is None and row.get("workspace") == folder:
                return thread_id
            if wanted is not None and thread_id.startswith(wanted):
                found.append(thread_id)
        cursor = page.get("next_cursor")
        if cursor is None:
            break
    if wanted is None:
        raise UserMistake(f"the server has no thread of this workspace ({folder}) to continue")
    if not found:
        raise UserMistake(f"the server has no thread {wanted!r}")
    if len(found) > 1:
        raise UserMistake(f"{wanted!r} names {len(found)} of the server's threads: give more of it")
    return found[0]


async def open_remote_chat(
    remote: Remote,
    home: Path,
    setup: RemoteSetup,
    *,
    continue_latest: bool = False,
    resume: str | None = None,
) -> str | None:
    """Run the session on the server until the user leaves; the thread it
    ended on. ``setup.workspace`` is absolute."""
    from prompt_toolkit.patch_stdout import patch_stdout

    with explained(remote):
        async with (
            remote.async_client() as client,
            httpx.AsyncClient(base_url=remote.url, headers=remote.headers()) as stream,
        ):
            thread_id = setup.thread_id
            if continue_latest or resume is not None:
                folder = str(setup.workspace)
                thread_id = await pick_remote_thread(client, folder, resume)
            chosen = RemoteSetup(setup.workspace, thread_id, setup.settings)
            session = RemoteChat(remote, client, stream, chosen, ChatInput(home), ChatSink())
            with patch_stdout(raw=True):
                await session.run()
            return session.thread_id
