"""Context compaction, the pure part: the history window a request is built
from, where a new compaction may cut, and the summarising request.

A long thread outgrows the model's context window. A ``compaction`` item
holds a summary written by the model that stands for the history up to the
item ``covers_until`` names. The request history then *starts* at the latest
compaction that applies: its summary first, then the items after the point
it covers (:func:`history_window`). Between two compactions that history
only grows by appending, so the provider's prefix cache keeps hitting; at a
compaction the prefix starts afresh once, which is the point.

A compaction applies when it is completed with a non-blank summary, names an
item before it, and that cut is *safe*: the model step the cut ends has no
open call and no result after the cut (a cut never parts a call from its
result). Compactions are looked for only in the items they are given: the
caller passes the visible turns, so a compaction in turns hidden by a rewind
(or past a fork's point, which the fork never copied) does not apply and the
window falls back to the previous one, or to the whole history. Compactions
that name a cut but do not apply are left out of the history: their summary
would repeat what is still there, or speak of turns the user took back. A
compaction without ``covers_until`` (older logs) is a user entry where it
stands, as before.

Where a new compaction cuts (:func:`plan_compaction`): at the end of the last
settled turn, never inside the turn still open (its user message and steps
stay word for word), and only past the compaction that applies now, so the
new summary is written from the old one plus what came after it.

Token estimates (:func:`estimate_request_tokens`) are deliberately crude and
cheap, see :data:`CHARS_PER_TOKEN` and the constants beside it. They decide
*when* to compact before a step; a provider's context-overflow error is the
backstop when they are wrong.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import cast

import msgspec

from kun.contracts.items import (
    OPEN_STATUSES,
    AssistantReasoning,
    AssistantText,
    Attachment,
    Compaction,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.contracts.model import ModelRequest, ToolSpec
from kun.domain.state import QUEUE_CANCELLED, TurnState

__all__ = [
    "ATTACHMENT_TOKENS",
    "CHARS_PER_TOKEN",
    "COMPACTION_PROMPT",
    "DEFAULT_COMPACT_AT",
    "MESSAGE_OVERHEAD_TOKENS",
    "SUMMARY_PREFIX",
    "CompactionPlan",
    "compaction_item",
    "estimate_request_tokens",
    "history_window",
    "item_tokens",
    "plan_compaction",
    "should_compact",
    "summary_request",
    "text_tokens",
    "visible_history",
]

DEFAULT_COMPACT_AT = 0.8
"""Compact when the estimated prompt fills this share of the context window:
the rest is room for the reply (up to 32k tokens with thinking) and for the
estimate's error."""

CHARS_PER_TOKEN = 4
"""ASCII characters per token: the usual rate of BPE tokenizers (cl100k,
o200k, Claude's, DeepSeek's) on English and code."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Per message, call or tool: role markers and separators (OpenAI documents
3-4 tokens per chat message)."""

ATTACHMENT_TOKENS = 1600
"""An image, or an attachment of unknown size: Anthropic bills an image as
width x height / 750 tokens and resizes anything above ~1.15 megapixels, so
about 1600 at most; OpenAI's high-detail 1024 x 1024 is 765."""

SUMMARY_PREFIX = (
    "Summary of the earlier conversation in this thread (it replaces the messages "
    "before this point; continue from it, do not restart):\n\n"
)

COMPACTION_PROMPT = """\
Stop here: do not continue the task and do not call tools. The conversation \
above is about to be replaced by a summary, because it no longer fits in your \
context window. Write that summary now. It is all that you, or whoever \
continues, will know of this conversation, so it must let the work go on \
without asking the user again.

Write it in the language the user writes in, as plain Markdown, with these \
sections:

1. Goal: what the user asked for, in their words where they matter, with \
every constraint and preference they stated, and how the request changed.
2. Done so far: what was decided and what was done, with the files, commands, \
functions and identifiers involved (exact paths and names).
3. Current state: what works, what fails and the exact error messages that \
still matter, and what is being done right now.
4. Next steps: what remains, in order, and any open question for the user.
5. Key facts: anything else the rest of the work depends on (versions, \
settings, results of checks), and what was tried and did not work.

Keep what cannot be found again and drop what can (long file contents and \
tool outputs: name the file or command instead). If the conversation already \
starts with a summary, merge it into yours: nothing in it may be lost unless \
it was superseded."""


def history_window(items: Sequence[Item]) -> Sequence[Item]:
    """The items a request is built from (see the module docstring).
    Without any compaction that names a cut, ``items`` itself. It runs
    before every step over the whole visible history, so the scans are
    C-level list searches, not a Python loop over every item."""
    marks = _windowed_marks(items)
    if not marks:
        return items
    applied: int | None = None
    cut = -1
    for at in reversed(marks):
        item = items[at]
        if not isinstance(item, Compaction) or not _is_summary(item):
            continue
        found = _index_of(items, item.covers_until, at)
        if found is not None and _safe_cut(items, found):
            applied, cut = at, found
            break
    window: list[Item] = [] if applied is None else [items[applied]]
    start = cut + 1
    for at in marks:
        if at > cut:
            window += items[start:at]
            start = at + 1
    window += items[start:]
    return window


def _windowed_marks(items: Sequence[Item]) -> list[int]:
    """Where the compactions that name a cut are, in order."""
    types = list(map(type, items))
    marks: list[int] = []
    at = -1
    while True:
        try:
            at = types.index(Compaction, at + 1)
        except ValueError:
            return marks
        if cast(Compaction, items[at]).covers_until is not None:
            marks.append(at)


def visible_history(turns: Iterable[TurnState]) -> Sequence[Item]:
    """The history of a request over a thread's ``turns``: the items of the
    turns no rewind hides, through :func:`history_window`. A queued turn
    has not happened yet, and one cancelled while queued never happened:
    the model is not told their messages."""
    items: list[Item] = []
    for turn in turns:
        if (
            turn.hidden_by is None
            and turn.status != "queued"
            and turn.abort_reason != QUEUE_CANCELLED
        ):
            items.extend(turn.items)
    return history_window(items)


class CompactionPlan(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """What a new compaction would stand for: the history up to and
    including ``covers_until``, as the request history shows it now
    (``items``, starting with the summary that applies, if any);
    ``replaced_items`` counts the items past that summary."""

    covers_until: str
    items: tuple[Item, ...]
    replaced_items: int


def plan_compaction(turns: Sequence[TurnState]) -> CompactionPlan | None:
    """Where a new compaction over the visible ``turns`` would cut, or
    ``None`` when there is nothing new to summarise (see the module
    docstring): the end of the last settled turn before the open one, past
    the compaction that applies now."""
    items: list[Item] = []
    ends: list[int] = []
    for turn in turns:
        items.extend(turn.items)
        if turn.settled and turn.items:
            ends.append(len(items) - 1)
    window = history_window(items)
    floor = -1
    if window and window is not items and _is_windowed(window[0]):
        floor = next(at for at, item in enumerate(items) if item is window[0])
    for end in reversed(ends):
        if end < floor:
            return None
        if not _safe_cut(items, end):
            continue
        covered = history_window(items[: end + 1])
        start = 1 if covered and _is_windowed(covered[0]) else 0
        replaced = sum(1 for item in covered[start:] if _sent(item))
        if replaced == 0:
            return None
        return CompactionPlan(
            covers_until=items[end].id, items=tuple(covered), replaced_items=replaced
        )
    return None


def summary_request(
    items: Sequence[Item],
    *,
    system_prompt: str = "",
    budget_tokens: int | None = None,
    max_tokens: int | None = None,
) -> ModelRequest:
    """The summarising request for a plan's ``items``: those items as the
    history, then :data:`COMPACTION_PROMPT` as the last user message, and no
    tools. Over ``budget_tokens`` the oldest items after a leading summary
    are left out, cutting only where a call keeps its result."""
    history = list(items)
    if budget_tokens is not None:
        history = _fit(history, budget_tokens - text_tokens(system_prompt))
    prompt = UserMessage(id="compaction_prompt", text=COMPACTION_PROMPT)
    return ModelRequest(
        system_prompt=system_prompt,
        history=(*history, prompt),
        tools=(),
        max_tokens=max_tokens,
    )


def compaction_item(item_id: str, text: str, plan: CompactionPlan) -> Compaction:
    """The item recording a summary the model wrote for ``plan``."""
    return Compaction(
        id=item_id,
        summary=SUMMARY_PREFIX + text.strip(),
        replaced_items=plan.replaced_items,
        covers_until=plan.covers_until,
    )


def should_compact(
    estimated_tokens: int, context_window: int | None, compact_at: float = DEFAULT_COMPACT_AT
) -> bool:
    """Whether a prompt of ``estimated_tokens`` should be compacted first.
    An unknown window never triggers: the overflow error is the backstop."""
    if context_window is None or context_window <= 0:
        return False
    return estimated_tokens > context_window * compact_at


def text_tokens(text: str) -> int:
    """About how many tokens ``text`` is: ASCII at :data:`CHARS_PER_TOKEN`
    characters a token, and one token for each character of three or four
    UTF-8 bytes (CJK runs about one token a character); two-byte characters
    (accented Latin, Cyrillic) count half. Two ``len`` calls, no tokenizer."""
    if not text:
        return 0
    chars = len(text)
    wide = (len(text.encode("utf-8", "surrogatepass")) - chars) / 2
    return math.ceil((chars - wide) / CHARS_PER_TOKEN + wide)


def item_tokens(item: Item) -> int:
    """About what ``item`` adds to a prompt (0 for what is never sent)."""
    if isinstance(item, UserMessage):
        return MESSAGE_OVERHEAD_TOKENS + text_tokens(item.text) + _attachments(item.attachments)
    if isinstance(item, Compaction):
        return MESSAGE_OVERHEAD_TOKENS + text_tokens(item.summary)
    if isinstance(item, AssistantText | AssistantReasoning):
        return MESSAGE_OVERHEAD_TOKENS + text_tokens(item.text)
    if isinstance(item, ToolCall):
        arguments = len(bytes(item.arguments)) // CHARS_PER_TOKEN
        return MESSAGE_OVERHEAD_TOKENS + text_tokens(item.name) + arguments
    if isinstance(item, ToolResult):
        output = text_tokens(item.output)
        if item.output_ref is not None:
            output = max(output, item.output_ref.size // CHARS_PER_TOKEN)
        return MESSAGE_OVERHEAD_TOKENS + output + _attachments(item.attachments)
    return 0


def estimate_request_tokens(request: ModelRequest) -> int:
    """About how many input tokens ``request`` is, summed over its parts
    (see the constants): cheap enough to run before every step."""
    texts = (
        request.system_prompt,
        request.persona,
        request.project_context,
        request.mode_instruction,
        request.context_instructions,
    )
    total = sum(MESSAGE_OVERHEAD_TOKENS + text_tokens(t) for t in texts if t)
    total += sum(item_tokens(item) for item in request.prefix)
    total += sum(item_tokens(item) for item in request.history)
    total += sum(_tool_tokens(tool) for tool in request.tools)
    return total + _attachments(request.attachments)


def _tool_tokens(tool: ToolSpec) -> int:
    schema = len(bytes(tool.parameters)) // CHARS_PER_TOKEN
    return MESSAGE_OVERHEAD_TOKENS + text_tokens(tool.name) + text_tokens(tool.description) + schema


def _attachments(attachments: Sequence[Attachment]) -> int:
    total = 0
    for attachment in attachments:
        size = attachment.size_bytes
        if attachment.mime_type.startswith("image/") or size is None:
            total += ATTACHMENT_TOKENS
        else:
            total += size // CHARS_PER_TOKEN
    return total


def _is_summary(item: Compaction) -> bool:
    return item.status == "completed" and bool(item.summary.strip())


def _is_windowed(item: Item) -> bool:
    return isinstance(item, Compaction) and item.covers_until is not None


def _sent(item: Item) -> bool:
    return isinstance(
        item, UserMessage | Compaction | AssistantText | AssistantReasoning | ToolCall | ToolResult
    )


def _index_of(items: Sequence[Item], item_id: str | None, before: int) -> int | None:
    """Where ``item_id`` is before ``before``, searched backwards: a cut is
    near its compaction (what follows it fits in the context window)."""
    for at in range(before - 1, -1, -1):
        if items[at].id == item_id:
            return at
    return None


def _safe_cut(items: Sequence[Item], cut: int) -> bool:
    """Whether the history may be cut right after ``items[cut]``: the cut
    comes right before a user entry (or at the end), no call of the model
    step before it is still open, and no result comes after it before the
    next model step. A user entry after a step that is not waiting for
    results closes it (:mod:`kun.domain.history`), so then no call can be
    parted from its result; a result right after the cut may belong to a
    step before it, and the cut is refused whatever its id. Compactions
    that name a cut are not where they stand in a window, so they are
    passed over here."""
    end = len(items)
    for at in range(cut + 1, end):
        item = items[at]
        if _user_entry(item):
            break
        if _sent(item) and not _is_windowed(item) and not isinstance(item, UserMessage):
            return False
    for at in range(cut + 1, end):
        item = items[at]
        if isinstance(item, AssistantText | AssistantReasoning | ToolCall):
            break
        if isinstance(item, ToolResult):
            return False
    at = cut
    while at >= 0 and not isinstance(items[at], AssistantText | AssistantReasoning | ToolCall):
        at -= 1
    while at >= 0 and not isinstance(items[at], ToolResult) and not _user_entry(items[at]):
        item = items[at]
        if isinstance(item, ToolCall) and item.status in OPEN_STATUSES:
            return False
        at -= 1
    return True


def _user_entry(item: Item) -> bool:
    """A user entry of the history repair (``kun.domain.history``)."""
    if isinstance(item, UserMessage):
        return bool(item.text.strip() or item.attachments)
    return isinstance(item, Compaction) and item.covers_until is None and _is_summary(item)


def _fit(items: list[Item], budget: int) -> list[Item]:
    """``items`` without the oldest ones after a leading summary, so the rest
    is within ``budget`` tokens (with room for the prompt). This is the
    summariser's input, not a window: the cut may fall anywhere, and
    results whose call it left out are skipped (the history repair would
    drop them as orphans)."""
    budget -= MESSAGE_OVERHEAD_TOKENS + text_tokens(COMPACTION_PROMPT)
    start = 1 if items and _is_windowed(items[0]) else 0
    costs = [item_tokens(item) for item in items]
    total = sum(costs)
    at = start
    while at < len(items) and total > budget:
        total -= costs[at]
        at += 1
    while at < len(items) and isinstance(items[at], ToolResult):
        at += 1
    return [*items[:start], *items[at:]]
