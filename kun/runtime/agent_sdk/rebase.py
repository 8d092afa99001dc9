"""What a delegated turn sends as its prompt: kun's history as a transcript
(when it rebases), the turn's instructions, and the user's request.

A rebased turn replays kun's history to an SDK session that never saw it
(after a restart, a provider switch, a rewind: :mod:`kun.domain.delegated`),
as text: a readable transcript, the most recent part kept when it is over
:data:`MAX_TRANSCRIPT_BYTES` (the newest turns matter most, and a prompt of
megabytes would spend a subscription's budget on old turns). The prompt is
ordered context → instructions → request:

    Earlier conversation in this thread (context — continue it; do not restart):
    <prior_conversation>
    …
    </prior_conversation>

    …the turn's instructions (plan mode, goal, todos)…

    Current request:
    …the user's words…

With neither a history nor instructions it is the user's text alone, byte
for byte what they would type to Claude Code (the SDK's prompt cache sees
the same bytes). Pure: no IO.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kun.contracts.items import (
    AssistantText,
    Compaction,
    ErrorItem,
    Item,
    Plan,
    ToolCall,
    ToolResult,
    UserInput,
    UserMessage,
)
from kun.domain.compaction import visible_history
from kun.domain.state import ThreadState

__all__ = [
    "CUT_MARK",
    "MAX_TRANSCRIPT_BYTES",
    "cap_transcript",
    "compose_prompt",
    "history_transcript",
    "prior_history",
    "request_text",
]

MAX_TRANSCRIPT_BYTES = 48 * 1024
CUT_MARK = "[… earlier conversation cut to fit …]\n"
RESULT_CHARS = 2000
ARGUMENT_CHARS = 1000


def prior_history(state: ThreadState, turn_id: str) -> Sequence[Item]:
    """The history a request would show, without the turn ``turn_id``."""
    return visible_history(t for t in state.turns if t.turn_id != turn_id)


def request_text(items: Iterable[Item]) -> str:
    """The user's words of a turn: its user messages that are not steering
    (steering is sent to the running session as it arrives)."""
    return "\n\n".join(
        item.text for item in items if isinstance(item, UserMessage) and not item.steered
    )


def history_transcript(items: Iterable[Item], max_bytes: int = MAX_TRANSCRIPT_BYTES) -> str:
    """``items`` as a transcript, capped at ``max_bytes`` of UTF-8."""
    lines = [line for item in items for line in _lines(item)]
    return cap_transcript("\n".join(lines), max_bytes)


def cap_transcript(text: str, max_bytes: int = MAX_TRANSCRIPT_BYTES) -> str:
    """``text`` if its UTF-8 fits ``max_bytes``; else :data:`CUT_MARK` and
    as much of its end as fits with it, never starting inside a character."""
    data = text.encode()
    if len(data) <= max_bytes:
        return text
    budget = max_bytes - len(CUT_MARK.encode())
    if budget <= 0:
        return ""
    tail = data[len(data) - budget :]
    start = 0
    while start < len(tail) and tail[start] & 0xC0 == 0x80:
        start += 1
    return CUT_MARK + tail[start:].decode()


def compose_prompt(transcript: str, instructions: str | None, request: str) -> str:
    """The prompt of a delegated turn (see the module docstring)."""
    if not transcript and not instructions:
        return request
    parts = []
    if transcript:
        parts.append(
            "Earlier conversation in this thread (context — continue it; do not restart):\n"
            f"<prior_conversation>\n{transcript}\n</prior_conversation>"
        )
    if instructions:
        parts.append(instructions)
    parts.append(f"Current request:\n{request}")
    return "\n\n".join(parts)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def _lines(item: Item) -> list[str]:
    if isinstance(item, UserMessage):
        return [f"User: {item.text}"]
    if isinstance(item, AssistantText) and item.status == "completed" and item.text:
        return [f"Assistant: {item.text}"]
    if isinstance(item, ToolCall):
        arguments = bytes(item.arguments).decode(errors="replace")
        return [f"Assistant called {item.name}: {_cut(arguments, ARGUMENT_CHARS)}"]
    if isinstance(item, ToolResult):
        label = "error" if item.is_error else "result"
        return [f"Tool {item.name} {label}: {_cut(item.output, RESULT_CHARS)}"]
    if isinstance(item, UserInput) and item.answer is not None:
        return [f"Assistant asked: {item.question}", f"User answered: {item.answer}"]
    if isinstance(item, Plan):
        return [f"Plan:\n{item.markdown}"]
    if isinstance(item, Compaction):
        return [f"Summary of the conversation before this point:\n{item.summary}"]
    if isinstance(item, ErrorItem):
        return [f"(The turn failed: {item.code})"]
    return []
