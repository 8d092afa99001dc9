"""The mutable fold of one turn: items, streamed fragments, tools in flight.

Private to the reducer. Deltas are kept as fragment lists and joined only when
a snapshot is taken or the item is replaced, so a long streamed answer costs
linear time. Counters the log bumps often (usage, steers, the pipeline stage)
are plain attributes, written into the ``TurnState`` only by ``freeze``; a
frozen ``TurnState`` is cached until the turn changes again.
"""

from __future__ import annotations

import msgspec

from kun.contracts.items import (
    OPEN_STATUSES,
    Approval,
    AssistantReasoning,
    AssistantText,
    Item,
    ItemStatus,
    ToolCall,
    ToolResult,
    UserInput,
    UserMessage,
)
from kun.contracts.usage import UsageSnapshot, UsageTotals
from kun.domain.state import TurnState
from kun.domain.usage import COST_DIGITS

_replace = msgspec.structs.replace


class Fragments:
    """Text streamed for one open item and not yet folded into it. It exists
    only while its item is open and of type ``kind``; ``parts`` holds text or a
    tool call's argument fragments, ``names`` a tool call's name fragments."""

    __slots__ = ("kind", "names", "parts")

    def __init__(self, kind: type[Item]) -> None:
        self.kind = kind
        self.parts: list[str] = []
        self.names: list[str] = []


class UsageSum:
    """A running ``UsageTotals`` that adds a call in place, with exactly the
    arithmetic of :func:`kun.domain.usage.add_usage` (costs rounded after each
    addition, in log order), so a fold gives the same totals as ``add_usage``
    without building a struct per usage event."""

    __slots__ = (
        "cache_hit_tokens",
        "cache_miss_tokens",
        "cache_write_tokens",
        "calls",
        "completion_tokens",
        "cost_usd",
        "prompt_tokens",
        "reasoning_tokens",
        "unpriced_calls",
    )

    def __init__(self, totals: UsageTotals) -> None:
        self.calls = totals.calls
        self.prompt_tokens = totals.prompt_tokens
        self.completion_tokens = totals.completion_tokens
        self.reasoning_tokens = totals.reasoning_tokens
        self.cache_hit_tokens = totals.cache_hit_tokens
        self.cache_miss_tokens = totals.cache_miss_tokens
        self.cache_write_tokens = totals.cache_write_tokens
        self.cost_usd = totals.cost_usd
        self.unpriced_calls = totals.unpriced_calls

    def add(self, call: UsageSnapshot) -> None:
        self.calls += 1
        self.prompt_tokens += call.prompt_tokens
        self.completion_tokens += call.completion_tokens
        self.reasoning_tokens += call.reasoning_tokens
        self.cache_hit_tokens += call.cache_hit_tokens
        self.cache_miss_tokens += call.cache_miss_tokens
        self.cache_write_tokens += call.cache_write_tokens
        cost = call.cost_usd
        if cost is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd = round(self.cost_usd + cost, COST_DIGITS)

    def totals(self) -> UsageTotals:
        return UsageTotals(
            calls=self.calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            reasoning_tokens=self.reasoning_tokens,
            cache_hit_tokens=self.cache_hit_tokens,
            cache_miss_tokens=self.cache_miss_tokens,
            cache_write_tokens=self.cache_write_tokens,
            cost_usd=self.cost_usd,
            unpriced_calls=self.unpriced_calls,
        )


class TurnFold:
    """One turn being folded. ``steered``, ``storms_suppressed``,
    ``last_stage``, ``delegated`` and ``usage`` are the source of truth for
    those fields (``base`` keeps stale copies); whoever changes any attribute
    sets ``frozen`` to None."""

    __slots__ = (
        "base",
        "delegated",
        "frozen",
        "in_flight",
        "index",
        "items",
        "last_stage",
        "open",
        "pending",
        "steered",
        "storms_suppressed",
        "usage",
    )

    def __init__(self, base: TurnState) -> None:
        self.base = base
        self.steered = base.steered
        self.storms_suppressed = base.storms_suppressed
        self.last_stage = base.last_stage
        self.delegated = base.delegated
        self.usage = UsageSum(base.usage)
        self.open = not base.settled
        self.items: list[Item] = list(base.items)
        self.index: dict[str, int] = {item.id: i for i, item in enumerate(self.items)}
        self.pending: dict[str, Fragments] = {}
        self.in_flight: list[str] = list(base.tools_in_flight)
        self.frozen: TurnState | None = base

    @property
    def settled(self) -> bool:
        return not self.open

    def update(self, **changes: object) -> None:
        self.base = _replace(self.base, **changes)
        self.open = not self.base.settled
        self.frozen = None

    def get(self, item_id: str) -> Item | None:
        i = self.index.get(item_id)
        if i is None:
            return None
        if item_id in self.pending:
            return self._materialize(item_id, i)
        return self.items[i]

    def put(self, item: Item) -> None:
        """Insert or replace ``item`` whole; fragments streamed for it are dropped."""
        self.frozen = None
        self.pending.pop(item.id, None)
        i = self.index.get(item.id)
        if i is None:
            self.index[item.id] = len(self.items)
            self.items.append(item)
        else:
            self.items[i] = item

    def place(self, item: Item) -> bool:
        """Insert ``item``, or let it replace the open item of its id and type
        (fragments streamed for that item are dropped). Changes nothing and
        returns False when the reducer must decide: the item there is final or
        of another type, or a tool call in flight is closing."""
        item_id = item.id
        i = self.index.get(item_id)
        if i is None:
            self.index[item_id] = len(self.items)
            self.items.append(item)
        else:
            current = self.items[i]
            if (
                type(current) is not type(item)
                or current.status not in OPEN_STATUSES
                or (item_id in self.in_flight and item.status not in OPEN_STATUSES)
            ):
                return False
            if self.pending:
                self.pending.pop(item_id, None)
            self.items[i] = item
        self.frozen = None
        return True

    def first_fragments(
        self, item_id: str, kind: type[Item], call_id: str = ""
    ) -> Fragments | None:
        """The fragments of a new item ``item_id``, placed in progress as a
        first delta implies (a tool call of ``call_id``); ``None`` when the
        item exists and the reducer must judge the delta."""
        if item_id in self.index:
            return None
        item: Item
        if kind is ToolCall:
            item = ToolCall(
                id=item_id,
                status="in_progress",
                call_id=call_id,
                arguments=msgspec.Raw(b"{}"),
            )
        elif kind is AssistantReasoning:
            item = AssistantReasoning(id=item_id, status="in_progress")
        else:
            item = AssistantText(id=item_id, status="in_progress")
        self.frozen = None
        self.index[item_id] = len(self.items)
        self.items.append(item)
        frags = self.pending[item_id] = Fragments(kind)
        return frags

    def fragments(self, item_id: str, kind: type[Item]) -> Fragments:
        """The fragments of the open item ``item_id`` (of type ``kind``)."""
        self.frozen = None
        frags = self.pending.get(item_id)
        if frags is None:
            frags = self.pending[item_id] = Fragments(kind)
        return frags

    def _materialize(self, item_id: str, i: int) -> Item:
        item = self.items[i]
        frags = self.pending.pop(item_id)
        text = "".join(frags.parts)
        if isinstance(item, ToolCall):
            name = item.name + "".join(frags.names)
            item = _replace(item, name=name, arguments_text=item.arguments_text + text)
        elif isinstance(item, AssistantText | AssistantReasoning):
            item = _replace(item, text=item.text + text)
        self.items[i] = item
        return item

    def freeze(self) -> TurnState:
        if self.frozen is None:
            for item_id in list(self.pending):
                self._materialize(item_id, self.index[item_id])
            self.frozen = _replace(
                self.base,
                items=tuple(self.items),
                tools_in_flight=tuple(self.in_flight),
                usage=self.usage.totals(),
                steered=self.steered,
                storms_suppressed=self.storms_suppressed,
                last_stage=self.last_stage,
                delegated=self.delegated,
            )
        return self.frozen

    def seal(self, final: str, orphaned: bool) -> tuple[list[str], list[str]]:
        """Give every open item a final status (SPEC §4 rule 5).

        Pending approvals expire, pending user inputs are cancelled, a tool
        call that had started and not finished when the turn was orphaned is
        ``unknown_after_crash`` (even when reconciliation gave it a result
        saying so), a tool call without a result is failed (aborted if the
        turn was);
        every other open item takes the turn's final status. Returns the ids of
        the approvals and user inputs that were closed.
        """
        for item_id in list(self.pending):
            self._materialize(item_id, self.index[item_id])
        open_items = [i for i, item in enumerate(self.items) if item.status in OPEN_STATUSES]
        answered: set[str] | None = None
        closed_approvals: list[str] = []
        closed_inputs: list[str] = []
        for i in open_items:
            item = self.items[i]
            status: ItemStatus
            if isinstance(item, Approval):
                status = "expired"
                closed_approvals.append(item.id)
            elif isinstance(item, UserInput):
                status = "cancelled"
                closed_inputs.append(item.id)
            elif isinstance(item, ToolCall):
                if answered is None:
                    answered = {r.call_id for r in self.items if isinstance(r, ToolResult)}
                if orphaned and item.id in self.in_flight:
                    status = "unknown_after_crash"
                elif item.call_id in answered:
                    status = _as_item_status(final)
                else:
                    status = "aborted" if final == "aborted" else "failed"
            else:
                status = _as_item_status(final)
            self.items[i] = _replace(item, status=status)
        self.in_flight.clear()
        self.frozen = None
        return closed_approvals, closed_inputs

    def discard_generated(self) -> int:
        """Drop every item but the user's messages; returns how many went."""
        kept: list[Item] = [item for item in self.items if isinstance(item, UserMessage)]
        dropped = len(self.items) - len(kept)
        self.items = kept
        self.index = {item.id: i for i, item in enumerate(kept)}
        self.pending.clear()
        self.frozen = None
        return dropped


def _as_item_status(turn_status: str) -> ItemStatus:
    if turn_status == "completed":
        return "completed"
    return "aborted" if turn_status == "aborted" else "failed"
