"""Slash commands: a table, so a command is one entry and one function.

Each command gets the session and the rest of the line. A user mistake
(a bad argument, a policy that does not exist) is one line and the session
goes on. While a turn runs only the commands marked ``while_running`` work;
the others say to wait or press Esc, because they change what the running
turn stands on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, get_args

from kun.app.listing import format_cost, format_when
from kun.app.live import describe_restore
from kun.app.requests import UpdateThread
from kun.app.selection import parse_target
from kun.chat.compact_command import compact_command
from kun.chat.goal_command import USAGE as GOAL_USAGE
from kun.chat.goal_command import goal_command
from kun.chat.plan_command import USAGE as PLAN_USAGE
from kun.chat.plan_command import plan_command
from kun.cli.options import explained, pasteable
from kun.contracts.threads import ApprovalPolicy
from kun.domain.shown import shown_cell
from kun.domain.transcript import format_usage, plural
from kun.domain.turnref import hidden_span
from kun.errors import KunError, UserMistake

if TYPE_CHECKING:
    from kun.chat.session import ChatSession

__all__ = ["COMMANDS", "Command", "run_command"]

Handler = Callable[["ChatSession", str], Awaitable[None]]
POLICIES: tuple[str, ...] = get_args(ApprovalPolicy)
THREADS_SHOWN = 10


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    summary: str
    handler: Handler
    while_running: bool = False


class CommandError(UserMistake):
    """A slash command used wrongly; the session shows the message."""


async def run_command(session: ChatSession, line: str) -> None:
    """Run the slash command ``line`` (``/name args``)."""
    name, _, rest = line[1:].partition(" ")
    command = COMMANDS.get(name.lower()) or ALIASES.get(name.lower())
    if command is None:
        session.say(f"unknown command /{name} (/help lists them)", "error")
        return
    if session.turn_id is not None and not command.while_running:
        session.say(f"/{command.name} waits until the turn ends (Esc interrupts it)", "warn")
        return
    try:
        await command.handler(session, rest.strip())
    except KunError as exc:
        session.say(explained(exc), "error")


def _thread(session: ChatSession) -> str:
    if session.thread_id is None:
        raise CommandError("no thread yet: send a message first")
    return session.thread_id


async def _help(session: ChatSession, rest: str) -> None:
    width = max(len(c.usage) for c in COMMANDS.values())
    for command in COMMANDS.values():
        session.say(f"{command.usage.ljust(width)}  {command.summary}")
    session.say(
        "Enter sends · Alt-Enter or a trailing \\ adds a line · "
        "typing while a turn runs steers it · Esc interrupts · Ctrl-D leaves",
        "dim",
    )


async def _model(session: ChatSession, rest: str) -> None:
    if not rest:
        providers = ", ".join((await session.kun.providers()).providers) or "none configured"
        session.say(f"model {session.target} (providers: {providers})")
        return
    provider, model = parse_target(rest)
    await session.change(UpdateThread(provider=provider, model=model))
    session.say(f"model {session.target}", "good")


async def _approval(session: ChatSession, rest: str) -> None:
    if not rest:
        session.say(f"approval {session.approval} (choices: {', '.join(POLICIES)})")
        return
    if rest not in POLICIES:
        raise CommandError(f"no approval policy {rest!r} (choices: {', '.join(POLICIES)})")
    await session.change(UpdateThread(approval_policy=rest))  # type: ignore[arg-type]
    session.say(f"approval {rest}", "good")


async def _rewind(session: ChatSession, rest: str) -> None:
    """``/rewind N`` hides turn N (as ``kun replay`` numbers it) and every
    later turn, as ``kun rewind THREAD N`` does; ``/rewind`` alone, the
    last turn."""
    thread_id = _thread(session)
    words = rest.split()
    files = "--files" in words
    rest = " ".join(w for w in words if w != "--files")
    if rest and (not rest.isdecimal() or int(rest) < 1):
        raise CommandError(
            "/rewind takes the number of the first turn to hide, e.g. /rewind 2 [--files]"
        )
    visible = (await session.refresh()).visible_turns
    if not rest and not visible:
        raise CommandError("this thread shows no turn to hide")
    ref = rest or visible[-1].turn_id
    done = await session.kun.rewind(thread_id, ref, files=files)
    await session.refresh()
    session.say(
        f"hid {hidden_span(done.turn_number, done.hidden)} "
        "(nothing is deleted; /undo-rewind brings them back)"
    )
    for line in describe_restore(done.files):
        session.say(line)


async def _undo_rewind(session: ChatSession, rest: str) -> None:
    undone = await session.kun.undo_rewind(_thread(session))
    await session.refresh()
    session.say(f"brought back {plural(undone.restored, 'hidden turn')}")
    for line in describe_restore(undone.files, undo=True):
        session.say(line)


async def _fork(session: ChatSession, rest: str) -> None:
    source = _thread(session)
    if rest and (not rest.isdecimal() or int(rest) < 1):
        raise CommandError("/fork takes the number of the last turn to keep, e.g. /fork 2")
    forked = await session.kun.fork(source, at_turn=rest or None)
    await session.switched(forked.thread_id)
    kept = f" keeping turns 1..{rest}" if rest else ""
    session.say(f"forked {source} -> {forked.thread_id}{kept}; now in {forked.thread_id}", "good")


async def _usage(session: ChatSession, rest: str) -> None:
    thread_id = _thread(session)
    state = await session.refresh()
    session.say(f"thread {thread_id}: {format_usage(state.usage)}")
    if state.visible_turns:
        session.say(f"last turn: {format_usage(state.visible_turns[-1].usage)}")


async def _threads(session: ChatSession, rest: str) -> None:
    from kun.chat.start import threads_of

    found = await threads_of(session.kun, session.workspace, THREADS_SHOWN)
    if not found:
        session.say("no threads in this workspace yet")
        return
    for summary in found:
        mark = "*" if summary.thread_id == session.thread_id else " "
        when = format_when(summary.updated_at)
        cost = format_cost(summary.usage)
        turns = f"{summary.turns:>3} turn" + ("" if summary.turns == 1 else "s")
        title = shown_cell(summary.title)
        session.say(f"{mark} {summary.thread_id}  {when}  {turns:<9}  {cost:>9}  {title}")
    session.say(f"{pasteable('resume', 'ID')} (a prefix will do) continues one", "dim")


async def _title(session: ChatSession, rest: str) -> None:
    _thread(session)
    if rest:
        await session.change(UpdateThread(title=rest))
    state = await session.refresh()
    session.say(f"title: {shown_cell(state.settings.title)}", "good" if rest else "plain")


async def _new(session: ChatSession, rest: str) -> None:
    await session.switched(None)
    session.say("new thread: it starts with your next message", "good")


async def _quit(session: ChatSession, rest: str) -> None:
    session.close()


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("help", "/help", "these commands", _help, while_running=True),
        Command("model", "/model [PROVIDER/]MODEL", "switch this thread's model", _model),
        Command("approval", "/approval POLICY", "switch the approval policy", _approval),
        Command(
            "rewind",
            "/rewind [N] [--files]",
            "hide turn N (as kun replay numbers it) and every later one (default: the "
            "last turn); --files puts kun's file changes back too",
            _rewind,
        ),
        Command("undo-rewind", "/undo-rewind", "bring back what the last rewind hid", _undo_rewind),
        Command("fork", "/fork [N]", "continue in a copy of this thread (turns 1..N)", _fork),
        Command("compact", "/compact", "summarise the history now", compact_command),
        Command("usage", "/usage", "tokens and cost of this thread", _usage, while_running=True),
        Command("threads", "/threads", "recent threads of this workspace", _threads, True),
        Command("title", "/title TEXT", "name this thread", _title),
        Command("goal", GOAL_USAGE, "the goal (/goal budget N: its tokens)", goal_command, True),
        Command("plan", PLAN_USAGE, "plan mode for the next turns; the plan", plan_command, True),
        Command("new", "/new", "start a new thread", _new),
        Command("quit", "/quit", "leave (Ctrl-D too)", _quit, while_running=True),
    )
}
ALIASES: dict[str, Command] = {"exit": COMMANDS["quit"], "q": COMMANDS["quit"]}
