"""Contract events for a session another agent recorded.

An importer calls one method per thing it understood, in the session's
order; :meth:`SessionBuilder.finish` returns the thread's log: a
``thread_created`` with what was learnt of the settings, then turns. A user
message opens a turn and the next one closes it (``turn_completed``: the
other agent finished it, or the session ended there); anything before the
first user message opens a turn of its own. Every item is written as one
``item_completed`` (nothing streams in an import), usage as ``usage`` events
naming the model, anything not understood as a ``warning`` (inside the open
turn it is a warning item), so nothing is dropped silently.

Ids are thread-local ids (:class:`kun.ids.IdMinter`) whose clock is the
session's own timestamps and whose random part comes from a generator seeded
with the thread id: importing the same session again yields the same bytes,
which is how an import tells "already imported" from "changed since".
"""

from __future__ import annotations

import random
from typing import Any

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import (
    AssistantReasoning,
    AssistantText,
    Compaction,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.contracts.threads import ThreadSettings
from kun.contracts.usage import UsageSnapshot
from kun.ids import IdMinter
from kun.portable.depth import TooDeep, decode_json

__all__ = ["TITLE_CHARS", "SessionBuilder", "raw_arguments"]

TITLE_CHARS = 60


def raw_arguments(value: object) -> msgspec.Raw:
    """A tool call's arguments as the JSON object kun keeps: an object as it
    is, a string holding one decoded from it, anything else (a string nested
    too deeply among them) as ``{"input": ...}``."""
    if isinstance(value, str):
        try:
            decoded = decode_json(value)
        except (msgspec.DecodeError, TooDeep):
            decoded = None
        value = decoded if isinstance(decoded, dict) else {"input": value}
    elif not isinstance(value, dict):
        value = {"input": value}
    return msgspec.Raw(msgspec.json.encode(value))


class SessionBuilder:
    """The log of one imported session, built in order (see the module)."""

    def __init__(self, thread_id: str, provider: str | None = None) -> None:
        self.thread_id = thread_id
        self.provider = provider
        self.model: str | None = None
        self.workspace = ""
        self.title: str | None = None
        self.title_auto = True
        self._at = 0
        self._mint = IdMinter(
            4,
            clock_ns=lambda: self._at * 1_000_000,
            randbits=random.Random(thread_id).getrandbits,
        )
        self._body: list[tuple[type[ev.EventBase], int, str | None, dict[str, Any]]] = []
        self._turn: str | None = None
        self._turn_start: dict[str, Any] | None = None
        self._calls: dict[str, str] = {}

    def clock(self, at_ms: int | None) -> None:
        """Later events happen at ``at_ms`` (never before earlier ones)."""
        if at_ms is not None and at_ms > self._at:
            self._at = at_ms

    def uses_model(self, model: str | None) -> None:
        """The model from here on; also the open turn's, if it named none."""
        if model:
            self.model = model
            if self._turn_start is not None and self._turn_start["model"] is None:
                self._turn_start["model"] = model

    def user(self, text: str) -> None:
        self.start_turn()
        if self.title is None:
            first = text.strip().splitlines()[0] if text.strip() else ""
            self.title = first[:TITLE_CHARS] or None
        self._item(UserMessage(id=self._mint("msg"), text=text))

    def assistant(self, text: str) -> None:
        self._item(AssistantText(id=self._mint("txt"), text=text))

    def reasoning(self, text: str, signature: str | None = None) -> None:
        self._item(AssistantReasoning(id=self._mint("rsn"), text=text, signature=signature))

    def tool_call(self, call_id: str, name: str, arguments: object) -> None:
        self._calls[call_id] = name
        self._item(
            ToolCall(
                id=self._mint("call"),
                call_id=call_id,
                name=name,
                arguments=raw_arguments(arguments),
            )
        )

    def tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        name = self._calls.get(call_id, "")
        item = ToolResult(
            id=self._mint("res"), call_id=call_id, name=name, output=output, is_error=is_error
        )
        self._item(item)

    def compaction(self, summary: str) -> None:
        self._item(Compaction(id=self._mint("cmp"), summary=summary))

    def usage(self, usage: UsageSnapshot, model: str | None = None) -> None:
        self.uses_model(model)
        self._emit(ev.Usage, usage=usage, provider=self.provider, model=model or self.model)

    def warning(self, code: str, message: str) -> None:
        self._emit(ev.WarningEvent, code=code, message=message)

    def abort_turn(self, reason: str) -> None:
        if self._turn is not None:
            self._emit(ev.TurnAborted, reason=reason)
            self._turn = self._turn_start = None

    def start_turn(self) -> None:
        self.end_turn()
        self._turn = self._mint("turn")
        self._turn_start = {"provider": self.provider, "model": self.model}
        self._body.append((ev.TurnStarted, self._at, self._turn, self._turn_start))

    def end_turn(self) -> None:
        if self._turn is not None:
            self._emit(ev.TurnCompleted)
            self._turn = self._turn_start = None

    def finish(self) -> list[ev.Event]:
        """The log: ``thread_created``, then everything in order."""
        self.end_turn()
        first_at = self._body[0][1] if self._body else self._at
        settings = ThreadSettings(
            workspace=self.workspace,
            provider=self.provider,
            model=self.model,
            title=self.title or "Imported session",
            title_auto=self.title_auto,
        )
        events: list[ev.Event] = [
            ev.ThreadCreated(seq=1, at=first_at, thread_id=self.thread_id, settings=settings)
        ]
        for seq, (kind, at, turn_id, fields) in enumerate(self._body, 2):
            event = kind(seq=seq, at=at, thread_id=self.thread_id, turn_id=turn_id, **fields)
            events.append(event)  # type: ignore[arg-type]
        return events

    def _item(self, item: Item) -> None:
        if self._turn is None:
            self.start_turn()
        self._emit(ev.ItemCompleted, item=item)

    def _emit(self, kind: type[ev.EventBase], **fields: Any) -> None:
        self._body.append((kind, self._at, self._turn, fields))
