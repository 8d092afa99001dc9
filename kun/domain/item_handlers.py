"""The reducer's handlers for items, streamed fragments and suspension points.

A mixin of :class:`kun.domain.reduce.Projector`, split out to keep each module
small; it shares the projector's private fold state (declared below).

An ``item_completed`` with ``text_from_deltas`` carries its streamed field
(``text``, or a tool call's ``arguments_text``) as ``""``: the text is what
the log built for the item before it (its deltas, after any whole version),
checked against the digest (length and BLAKE2b-64). A
mismatch is a ``ProjectionError`` naming the item: a text filled in wrong
would be worse than a log that does not replay. With ``arguments_from_text``
a tool call's raw ``arguments`` are that text's bytes too (the line has
``{}``).
"""

from __future__ import annotations

import msgspec
from msgspec import UnsetType

from kun.contracts import events as ev
from kun.contracts.events import digest_text, streamed_field
from kun.contracts.items import (
    OPEN_STATUSES,
    Approval,
    AssistantReasoning,
    AssistantText,
    Item,
    ToolCall,
    UserInput,
)
from kun.domain.errors import ProjectionError
from kun.domain.tags import item_type
from kun.domain.turn_fold import TurnFold

_replace = msgspec.structs.replace


class ItemHandlers:
    _turns: dict[str, TurnFold]
    _approvals: dict[str, str]
    _inputs: dict[str, str]
    _late_events: int

    # -- helpers ---------------------------------------------------------------

    def _late(self) -> None:
        self._late_events += 1

    def _turn(self, event: ev.EventBase) -> TurnFold:
        if event.turn_id is None:
            raise ProjectionError(event.seq, f"{type(event).__name__} has no turn_id")
        fold = self._turns.get(event.turn_id)
        if fold is None:
            raise ProjectionError(event.seq, f"turn {event.turn_id!r} was never started")
        return fold

    def _open_turn(self, event: ev.EventBase) -> TurnFold | None:
        fold = self._turn(event)
        if not fold.open:
            self._late()
            return None
        return fold

    # -- items -----------------------------------------------------------------

    def _item(self, e: ev.ItemCreated | ev.ItemUpdated | ev.ItemCompleted) -> None:
        fold = self._turns.get(e.turn_id) if e.turn_id is not None else None
        if fold is None:
            fold = self._turn(e)
        if not fold.open:
            self._late()
            return
        item = e.item
        item_id = item.id
        if type(e) is ev.ItemCompleted and e.arguments_from_text and e.text_from_deltas is None:
            raise ProjectionError(
                e.seq, f"item {item_id!r}: arguments_from_text without text_from_deltas"
            )
        fold.frozen = None
        i = fold.index.get(item_id)
        if i is None:
            if type(e) is ev.ItemCompleted and e.text_from_deltas is not None:
                item = _with_streamed_text(e, item, None)
            fold.index[item_id] = len(fold.items)
            fold.items.append(item)
            return
        current = fold.items[i]
        if current.status not in OPEN_STATUSES:
            self._late()
            return
        if type(current) is not type(item):
            raise ProjectionError(
                e.seq,
                f"item {item_id!r} changes type from {item_type(current)} to {item_type(item)}",
            )
        if type(e) is ev.ItemCompleted and e.text_from_deltas is not None:
            item = _with_streamed_text(e, item, fold.get(item_id))
        fold.pending.pop(item_id, None)
        fold.items[i] = item
        if (
            type(item) is ToolCall
            and item.status not in OPEN_STATUSES
            and item_id in fold.in_flight
        ):
            fold.in_flight.remove(item_id)

    def streamed_text(self, turn_id: str | None, item_id: str) -> str | None:
        """The streamed field (``streamed_field``) the log has built so far
        for the open item ``item_id`` of the open turn ``turn_id``, or
        ``None``: what a writer compares an ``item_completed`` with before
        recording it with ``text_from_deltas``."""
        fold = self._turns.get(turn_id) if turn_id is not None else None
        if fold is None or not fold.open:
            return None
        item = fold.get(item_id)
        if item is None or item.status not in OPEN_STATUSES:
            return None
        field = streamed_field(item)
        return None if field is None else str(getattr(item, field))

    def check_delta(
        self, e: ev.AssistantTextDelta | ev.AssistantReasoningDelta | ev.ToolCallDelta, seq: int
    ) -> None:
        """Raise the ``ProjectionError`` that applying ``e`` as event ``seq``
        would raise, changing nothing: a writer that holds a stream's first
        fragment back (to merge it with the next) still refuses a bad one in
        the call that made it."""
        fold = self._turn(_replace(e, seq=seq))
        if not fold.open:
            return
        kind = _DELTA_ITEMS[type(e)]
        frags = fold.pending.get(e.item_id)
        if frags is not None:
            current: type[Item] = frags.kind
        else:
            i = fold.index.get(e.item_id)
            if i is None:
                return
            current = type(fold.items[i])
        if current is not kind:
            raise ProjectionError(
                seq, f"{type(e).__name__} for item {e.item_id!r} of type {current.__name__}"
            )

    def _delta(
        self, e: ev.EventBase, item_id: str, kind: type[Item], text: str, name: str = ""
    ) -> None:
        fold = self._open_turn(e)
        if fold is None:
            return
        frags = fold.pending.get(item_id)
        if frags is None:
            i = fold.index.get(item_id)
            if i is None:
                fold.put(_implicit_item(kind, item_id, e))
            else:
                item = fold.items[i]
                if type(item) is not kind:
                    raise ProjectionError(
                        e.seq, f"{type(e).__name__} for item {item_id!r} of type {item_type(item)}"
                    )
                if item.status not in OPEN_STATUSES:
                    self._late()
                    return
            frags = fold.fragments(item_id, kind)
        elif frags.kind is not kind:
            raise ProjectionError(
                e.seq, f"{type(e).__name__} for item {item_id!r} of type {frags.kind.__name__}"
            )
        fold.frozen = None
        frags.parts.append(text)
        if name:
            frags.names.append(name)

    def _text_delta(self, e: ev.AssistantTextDelta) -> None:
        self._delta(e, e.item_id, AssistantText, e.text)

    def _reasoning_delta(self, e: ev.AssistantReasoningDelta) -> None:
        self._delta(e, e.item_id, AssistantReasoning, e.text)

    def _tool_call_delta(self, e: ev.ToolCallDelta) -> None:
        fold = self._turns.get(e.turn_id)  # type: ignore[arg-type]
        if fold is not None and fold.open:
            frags = fold.pending.get(e.item_id)
            if frags is not None and frags.kind is ToolCall:
                frags.parts.append(e.arguments)
                if e.name:
                    frags.names.append(e.name)
                return
        self._delta(e, e.item_id, ToolCall, e.arguments, e.name)

    def _tool_call_started(self, e: ev.ToolCallStarted) -> None:
        fold = self._open_turn(e)
        if fold is None:
            return
        item = fold.get(e.item_id)
        if not isinstance(item, ToolCall):
            raise ProjectionError(e.seq, f"tool_call_started for unknown call {e.item_id!r}")
        if e.item_id not in fold.in_flight:
            fold.in_flight.append(e.item_id)
            fold.frozen = None

    def _subagent_started(self, e: ev.SubagentStarted) -> None:
        """The call's link to its side thread; a call already final (a late
        event) keeps what it was."""
        fold = self._open_turn(e)
        if fold is None:
            return
        item = fold.get(e.item_id)
        if not isinstance(item, ToolCall):
            raise ProjectionError(e.seq, f"subagent_started for unknown call {e.item_id!r}")
        fold.put(_replace(item, side_thread=e.side_thread, agent=e.agent))

    def _tool_call_finished(self, e: ev.ToolCallFinished) -> None:
        fold = self._open_turn(e)
        if fold is None:
            return
        item = fold.get(e.item_id)
        if not isinstance(item, ToolCall):
            raise ProjectionError(e.seq, f"tool_call_finished for unknown call {e.item_id!r}")
        if e.item_id in fold.in_flight:
            fold.in_flight.remove(e.item_id)
        if item.status in OPEN_STATUSES:
            fold.put(_replace(item, status=e.status))
        else:
            fold.frozen = None

    # -- suspension points -----------------------------------------------------

    def _approval_requested(self, e: ev.ApprovalRequested) -> None:
        fold = self._open_turn(e)
        if fold is None:
            return
        if e.approval_id in fold.index:
            raise ProjectionError(e.seq, f"approval {e.approval_id!r} requested twice")
        fold.put(
            Approval(
                id=e.approval_id,
                status="pending",
                call_id=e.call_id,
                tool_name=e.tool_name,
                summary=e.summary,
                diff="" if isinstance(e.diff, UnsetType) else e.diff,
                side_thread=None if isinstance(e.side_thread, UnsetType) else e.side_thread,
            )
        )
        self._approvals[e.approval_id] = fold.base.turn_id

    def _approval_resolved(self, e: ev.ApprovalResolved) -> None:
        turn_id = self._approvals.pop(e.approval_id, None)
        if turn_id is None:
            self._late()
            return
        fold = self._turns[turn_id]
        item = fold.get(e.approval_id)
        assert isinstance(item, Approval)
        fold.put(_replace(item, status=e.decision, reason=e.reason))

    def _user_input_requested(self, e: ev.UserInputRequested) -> None:
        fold = self._open_turn(e)
        if fold is None:
            return
        if e.request_id in fold.index:
            raise ProjectionError(e.seq, f"user input {e.request_id!r} requested twice")
        fold.put(
            UserInput(
                id=e.request_id,
                status="pending",
                question=e.question,
                options=e.options,
                side_thread=None if isinstance(e.side_thread, UnsetType) else e.side_thread,
            )
        )
        self._inputs[e.request_id] = fold.base.turn_id

    def _user_input_resolved(self, e: ev.UserInputResolved) -> None:
        turn_id = self._inputs.pop(e.request_id, None)
        if turn_id is None:
            self._late()
            return
        fold = self._turns[turn_id]
        item = fold.get(e.request_id)
        assert isinstance(item, UserInput)
        fold.put(_replace(item, status=e.status, answer=e.answer))


_DELTA_ITEMS: dict[type, type[Item]] = {
    ev.AssistantTextDelta: AssistantText,
    ev.AssistantReasoningDelta: AssistantReasoning,
    ev.ToolCallDelta: ToolCall,
}


def _with_streamed_text(e: ev.ItemCompleted, item: Item, current: Item | None) -> Item:
    """``item`` with the text the log built for ``current``, once it is
    shown to be the one ``e.text_from_deltas`` describes."""
    digest = e.text_from_deltas
    assert digest is not None
    field = streamed_field(item)
    if field is None or getattr(item, field):
        raise ProjectionError(
            e.seq, f"item {item.id!r}: text_from_deltas on a {item_type(item)} that carries text"
        )
    text = str(getattr(current, field)) if type(current) is type(item) else ""
    if digest_text(text) != digest:
        raise ProjectionError(
            e.seq,
            f"item {item.id!r}: the text its deltas built ({len(text)} chars) is not the one "
            f"item_completed describes ({digest.chars} chars, blake2b {digest.blake2b})",
        )
    if e.arguments_from_text:
        if type(item) is not ToolCall or bytes(item.arguments) != b"{}":
            raise ProjectionError(
                e.seq,
                f"item {item.id!r}: arguments_from_text on a {item_type(item)} "
                "that carries its arguments",
            )
        return _replace(item, arguments_text=text, arguments=msgspec.Raw(text.encode()))
    return _replace(item, **{field: text})


def _implicit_item(kind: type[Item], item_id: str, e: ev.EventBase) -> Item:
    """The in-progress item a delta creates when it arrives before its item."""
    if kind is ToolCall:
        assert isinstance(e, ev.ToolCallDelta)
        return ToolCall(
            id=item_id, status="in_progress", call_id=e.call_id, arguments=msgspec.Raw(b"{}")
        )
    if kind is AssistantReasoning:
        return AssistantReasoning(id=item_id, status="in_progress")
    return AssistantText(id=item_id, status="in_progress")
