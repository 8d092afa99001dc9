"""Opening a session: which thread, which model, and the terminal set up.

``kun`` and ``kun chat`` start on a new thread (created with the first
message); ``kun -c`` takes the thread of this workspace with the latest
activity; ``kun resume ID`` any thread (an id prefix will do); ``kun
resume`` alone lists this workspace's recent threads (all threads when it
has none) and asks which, Enter taking the latest. A resumed thread keeps
its workspace, provider and model; ``--workspace`` / ``--provider`` /
``--model`` / ``--approval`` change them, recorded as ``thread_updated``.
A resumed thread whose workspace is not a folder here (imported from
another machine) is said so at once; its turns are refused until
``--workspace`` gives it one.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kun.app.lookup import ThreadSummary, latest_thread, recent_threads, resolve_thread_id
from kun.cli.flags import RuntimeFlags
from kun.contracts.threads import ApprovalPolicy
from kun.domain.shown import shown_cell
from kun.domain.transcript import plural
from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.chat.session import ChatSession

__all__ = ["ChatOptions", "NoThreadChosen", "choose_thread", "open_chat"]

PICK_SHOWN = 10


@dataclass(frozen=True)
class ChatOptions:
    home: Path
    config: Path | None
    provider: str | None
    model: str | None
    approval: ApprovalPolicy | None
    workspace: Path
    runtime: RuntimeFlags = field(default_factory=RuntimeFlags)
    rebind: Path | None = None
    """``--workspace`` given: a resumed thread's workspace from now on."""


class NoThreadChosen(UserMistake):
    pass


def needs_terminal() -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        mistake = UserMistake(
            "the interactive session needs a terminal; for one turn without one: kun run PROMPT"
        )
        mistake.suggests = ("run", "PROMPT")
        raise mistake


def continue_thread(home: Path, workspace: Path) -> str:
    """``kun -c``: the latest thread of ``workspace``."""
    found = latest_thread(home, workspace)
    if found is None:
        raise NoThreadChosen(f"no thread to continue in {workspace.resolve()}: start one with kun")
    return found


async def choose_thread(home: Path, workspace: Path, given: str | None) -> str:
    """``kun resume [ID]``: the thread ``given`` names, else the one the user
    picks from a short list."""
    if given is not None:
        return resolve_thread_id(home, given)
    found = recent_threads(home, workspace=workspace, limit=PICK_SHOWN)
    if not found:
        found = recent_threads(home, limit=PICK_SHOWN)
    if not found:
        raise NoThreadChosen("no threads yet: start one with kun")
    for number, summary in enumerate(found, start=1):
        print(f"{number:>2}  {shown_cell(_row(summary))}")
    from kun.cli.tty import TtyPrompter, open_terminal

    terminal = open_terminal()
    if terminal is None:
        mistake = NoThreadChosen("no terminal to pick on: give the thread id, kun resume ID")
        mistake.suggests = ("resume", "ID")
        raise mistake
    try:
        reply = await TtyPrompter(terminal).prompt(f"resume which? [1-{len(found)}, Enter: 1] ")
    finally:
        terminal.close()
    text = reply.text.strip()
    if reply.kind != "text":
        raise NoThreadChosen("no thread chosen")
    if not text:
        return found[0].thread_id
    if not text.isdecimal() or not 1 <= int(text) <= len(found):
        raise NoThreadChosen(f"no thread numbered {text!r}")
    return found[int(text) - 1].thread_id


def _row(summary: ThreadSummary) -> str:
    when = datetime.fromtimestamp(summary.updated_at / 1000).strftime("%Y-%m-%d %H:%M")
    turns = f"{summary.turns} turn" + ("" if summary.turns == 1 else "s")
    return f"{summary.thread_id}  {when}  {turns:>9}  {summary.title}  ({summary.workspace})"


async def open_chat(options: ChatOptions, thread_id: str | None) -> str | None:
    """Run the session until the user leaves; the thread it ended on."""
    from prompt_toolkit.patch_stdout import patch_stdout

    from kun.app.rebind import rebind_workspace
    from kun.chat.input import ChatInput
    from kun.chat.session import ChatSession, SessionSetup
    from kun.chat.view import ChatSink
    from kun.cli.foreground import open_foreground
    from kun.cli.lognotes import notes_from_log
    from kun.cli.run import retry_budget

    async with open_foreground(options, thread_id) as foreground:
        config, runtime, model = foreground.config, foreground.runtime, foreground.model
        rebound = None
        if thread_id is not None and options.rebind is not None:
            rebound = await rebind_workspace(foreground.service, thread_id, options.rebind)
        setup = SessionSetup(
            home=options.home,
            workspace=options.workspace,
            approval=options.approval or runtime.approval_policy,
            thread_id=thread_id,
        )
        sink = ChatSink()
        session = ChatSession(
            setup, foreground.service, foreground.router, model, ChatInput(options.home), sink
        )
        with patch_stdout(raw=True), notes_from_log(session.say, retry_budget(config, model)):
            if rebound is not None:
                session.say(rebound)
            if thread_id is not None:
                _recap(session, thread_id)
            await session.run()
        return session.thread_id


def _recap(session: ChatSession, thread_id: str) -> None:
    """A resumed thread's header and its last exchange, so the user knows
    where they are."""
    from kun.cli.options import explained
    from kun.contracts.items import AssistantText, UserMessage
    from kun.runtime.errors import WorkspaceMissing

    state = session.service.state(thread_id)
    settings = state.settings
    session.say(
        f"resumed {thread_id} · {shown_cell(settings.title)} · "
        f"{plural(len(state.visible_turns), 'turn')} · "
        f"{session.model.provider}/{session.model.model}",
        "good",
    )
    if settings.workspace and not Path(settings.workspace).is_dir():
        session.say(explained(WorkspaceMissing(thread_id, settings.workspace)), "error")
    if not state.visible_turns:
        return
    last = state.visible_turns[-1]
    for item in last.items:
        if isinstance(item, UserMessage):
            session.say(f"> {_first_line(item.text)}", "dim")
        elif isinstance(item, AssistantText):
            session.say(_first_line(item.text), "dim")


def _first_line(text: str, width: int = 200) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= width else line[: width - 3] + "..."
