"""Opening a session: which thread, and the terminal set up, on whichever
adapter the command line names (the home, or ``--server URL``).

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
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from kun.app.connect import Target, open_kun
from kun.app.interface import Kun, ThreadState
from kun.app.listing import ThreadSummary
from kun.domain.shown import shown_cell
from kun.domain.transcript import plural
from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.chat.session import ChatSession, SessionSetup

__all__ = [
    "NoThreadChosen",
    "choose_thread",
    "continue_thread",
    "open_chat",
    "say_recap",
    "threads_of",
]

PICK_SHOWN = 10
PAGES = 20
"""Pages of the thread list looked through for ``-c``."""


class NoThreadChosen(UserMistake):
    pass


def needs_terminal() -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        mistake = UserMistake(
            "the interactive session needs a terminal; for one turn without one: kun run PROMPT"
        )
        mistake.suggests = ("run", "PROMPT")
        raise mistake


async def threads_of(kun: Kun, workspace: str | None, most: int) -> list[ThreadSummary]:
    """Up to ``most`` threads, newest activity first (of ``workspace``)."""
    found: list[ThreadSummary] = []
    cursor: str | None = None
    for _ in range(PAGES):
        page = await kun.threads(limit=500, cursor=cursor)
        found += [t for t in page.threads if workspace is None or t.workspace == workspace]
        cursor = page.next_cursor
        if len(found) >= most or cursor is None:
            break
    return found[:most]


async def continue_thread(kun: Kun, workspace: str) -> str:
    """``kun -c``: the latest thread of ``workspace``."""
    found = await threads_of(kun, workspace, 1)
    if not found:
        raise NoThreadChosen(f"no thread to continue in {workspace}: start one with kun")
    return found[0].thread_id


async def choose_thread(kun: Kun, workspace: str, given: str | None) -> str:
    """``kun resume [ID]``: the thread ``given`` names, else the one the user
    picks from a short list."""
    if given is not None:
        return (await kun.thread(given)).thread_id
    found = await threads_of(kun, workspace, PICK_SHOWN)
    if not found:
        found = await threads_of(kun, None, PICK_SHOWN)
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


async def open_chat(
    target: Target,
    setup: SessionSetup,
    history: Path,
    *,
    continue_latest: bool = False,
    resume: str | None = None,
    pick: bool = False,
) -> str | None:
    """Run the session until the user leaves; the thread it ended on.
    ``history``: the home whose prompt history the input keeps."""
    import dataclasses

    from prompt_toolkit.patch_stdout import patch_stdout

    from kun.chat.input import ChatInput
    from kun.chat.session import ChatSession
    from kun.chat.view import ChatSink
    from kun.cli.lognotes import notes_from_log

    async with open_kun(target) as kun:
        thread_id = setup.thread_id
        if continue_latest:
            thread_id = await continue_thread(kun, setup.workspace)
        elif resume is not None or pick:
            thread_id = await choose_thread(kun, setup.workspace, resume)
        setup = dataclasses.replace(setup, thread_id=thread_id)
        session = ChatSession(kun, setup, ChatInput(history), ChatSink())
        with patch_stdout(raw=True), notes_from_log(session.say, _attempts):
            await session.run(recap=thread_id is not None)
        return session.thread_id


def _attempts() -> int:
    from kun.app.live import retry_attempts

    return retry_attempts(None, None)


def say_recap(session: ChatSession, state: ThreadState) -> None:
    """A resumed thread's header and its last exchange, so the user knows
    where they are."""
    from kun.app.live import WorkspaceMissing
    from kun.cli.options import explained
    from kun.contracts.items import AssistantText, UserMessage

    settings = state.settings
    session.say(
        f"resumed {state.thread_id} · {shown_cell(settings.title)} · "
        f"{plural(len(state.visible_turns), 'turn')} · {session.target}",
        "good",
    )
    if settings.workspace and session.where is None and not Path(settings.workspace).is_dir():
        session.say(explained(WorkspaceMissing(state.thread_id, settings.workspace)), "error")
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
