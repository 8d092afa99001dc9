"""``/compact``: the user asks kun to summarise the thread's history now,
before the context window forces it (:mod:`kun.runtime.compact_turn`).

The compaction is a short turn of its own; the command waits for it and
says what it did. While it runs the session treats it as the running turn,
so Ctrl-C interrupts it (the history is then left as it was). ``/rewind``
takes a compaction back like any turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kun.app.live import text_tokens
from kun.contracts.items import Compaction
from kun.domain.transcript import plural
from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.chat.session import ChatSession

__all__ = ["compact_command"]


class CompactCommandError(UserMistake):
    """``/compact`` used wrongly; the session shows the message."""


async def compact_command(session: ChatSession, rest: str) -> None:
    if rest:
        raise CompactCommandError("/compact takes no argument")
    thread_id = session.thread_id
    if thread_id is None:
        raise CompactCommandError("no thread yet: send a message first")
    started = await session.kun.compact(thread_id)
    turn_id = started.turn_id
    if turn_id is None:
        session.say(f"nothing to compact: {started.reason}")
        return
    session.say("compacting the history into a summary…", "dim")
    session.turn_id = turn_id
    try:
        turn = await session.kun.wait_turn(thread_id, turn_id)
    finally:
        if session.turn_id == turn_id:
            session.turn_id = None
    summary = next((i for i in turn.items if isinstance(i, Compaction)), None)
    if turn.status == "completed" and summary is not None:
        session.say(
            f"compacted {plural(summary.replaced_items, 'item')} into a summary of about "
            f"{text_tokens(summary.summary):,} tokens; the next turn starts from it "
            "(/rewind takes it back)",
            "good",
        )
    elif turn.status == "aborted":
        session.say("compaction interrupted: the history is unchanged", "warn")
    else:
        reason = turn.error.message if turn.error is not None else turn.status
        session.say(reason, "error")
