"""What one running turn carries: its ids, abort scope, steering, frozen tools.

Created by the TurnService when the turn starts, dropped when it settles. The
loop and dispatch read it; only the TurnService writes events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from kun.contracts import events as ev
from kun.contracts.context import TurnContext
from kun.contracts.model import ToolSpec, UsageChunk
from kun.contracts.threads import ApprovalPolicy, SideLink
from kun.domain.compaction import DEFAULT_COMPACT_AT
from kun.domain.recovery import RecoveryState
from kun.domain.state import ThreadState
from kun.model.port import ModelClient
from kun.runtime.gates import Gate
from kun.runtime.sidefiles import SideFiles
from kun.runtime.steering import SteeringQueue
from kun.runtime.storm import StormBreaker
from kun.tools.base import ToolOutput
from kun.tools.host import ToolHost

DEFAULT_MAX_STEPS = 200
DEFAULT_MAX_TURN_TOKENS = 10_000_000


@dataclass(frozen=True)
class TurnLimits:
    """``runtime.turn_limits``: exceeding one fails the turn with its code.
    ``cost_budget_usd`` holds the turn's own priced cost, not the thread's;
    ``max_turn_tokens`` the turn's own prompt and completion tokens, summed
    over its model calls (the summariser's included); ``None``: no limit.

    Every turn is bounded by default, so a looping model cannot spend without
    end: 200 steps is well past what a long real coding turn takes (100 and
    more tool steps happen) and stops a loop of cheap steps; 10 million
    tokens is about 100 steps at a 100,000-token prompt and stops a loop of
    big ones first. The wall limit stays a day: it counts the time a turn
    waits for your approval or answer. Cost has no default: an unpriced
    model has none to count."""

    max_steps: int | None = DEFAULT_MAX_STEPS
    max_wall_seconds: float = 24 * 3600.0
    max_tool_calls_per_step: int = 10_000
    cost_budget_usd: float | None = None
    max_turn_tokens: int | None = DEFAULT_MAX_TURN_TOKENS


class TurnHooks(Protocol):
    """Called when a turn has settled, in this order (SPEC §6.1 step 7):
    ``bookkeeping`` (goal accounting and the resume decision; it reads the
    per-turn state, so it runs before that state is dropped), then the
    service clears every per-turn structure, then ``turn_ended`` (observers:
    an exception there is logged and swallowed)."""

    async def bookkeeping(self, run: TurnRun, status: str) -> None: ...

    async def turn_ended(self, run: TurnRun, status: str) -> None: ...


class Writer(Protocol):
    """Records events for the turn. ``durable=False``: the batch may become
    durable later, with the next durable write (the tool ledger's group
    commit, :mod:`kun.runtime.dispatch`)."""

    async def __call__(self, *events: ev.Event, durable: bool = True) -> list[ev.Event]: ...


def draft(cls: type[Any], turn_id: str | None = None, **fields: Any) -> Any:
    """An event with placeholder envelope fields; the recorder numbers it."""
    return cls(seq=0, at=0, thread_id="", turn_id=turn_id, **fields)


def usage_event(run: TurnRun, chunk: UsageChunk, step: int) -> ev.Usage:
    """The ``usage`` event of one model call of ``run`` (a step's, or the
    summariser's)."""
    usage: ev.Usage = draft(
        ev.Usage,
        run.turn_id,
        usage=chunk.usage,
        provider=run.model.provider,
        model=chunk.model or run.model.model,
        request_id=chunk.request_id,
        price_source=chunk.price_source,
        step=step,
    )
    return usage


DELEGATE_TOOL = "delegate_task"


class Delegator(Protocol):
    """What runs a ``delegate_task`` call (:mod:`kun.runtime.delegation`)."""

    def can_delegate(self, run: TurnRun) -> bool:
        """Whether ``run`` may delegate (its depth is under the limit)."""
        ...

    def system_prompt(self, link: SideLink, base: str) -> str:
        """A side thread's system prompt: ``base`` with its agent's."""
        ...

    async def delegate(
        self, run: TurnRun, item_id: str, call_id: str, task: str, agent: str | None
    ) -> ToolOutput: ...


Mirror = Callable[[ev.Event], Awaitable[None]]
"""Shows an event of a side thread's turn in its parent's running turn (an
approval or a question and its answer), so it is asked where the parent's
are; :mod:`kun.runtime.delegation`."""


@dataclass
class TurnRun:
    """``context_window`` is the model's, in tokens (``None``: unknown, so
    only a context-overflow error compacts); ``compact_at`` the share of it
    the estimated prompt may fill (:mod:`kun.runtime.compact`).
    ``recovery`` carries the round-outcome counters (:mod:`kun.domain.recovery`)
    between the steps of the turn; a new turn starts from a fresh state.
    ``delegation`` runs its ``delegate_task`` calls (``None``: the tool is
    not offered); ``link`` is set on a side thread's turn, whose tools and
    policies it bounds; ``mirror`` shows its questions in the parent's turn."""

    thread_id: str
    turn_id: str
    workspace: Path
    policy: ApprovalPolicy
    disable_user_input: bool
    model: ModelClient
    tools: ToolHost
    limits: TurnLimits
    write: Writer
    state: Callable[[], ThreadState]
    approvals: Gate
    questions: Gate
    system_prompt: str = ""
    context: TurnContext | None = None
    reasoning_effort: str | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    steering: SteeringQueue = field(init=False)
    tool_specs: tuple[ToolSpec, ...] = ()
    started_at: float = field(default_factory=anyio.current_time)
    aborted: bool = False
    storm: StormBreaker = field(default_factory=StormBreaker)
    side_files: SideFiles | None = None
    context_window: int | None = None
    compact_at: float = DEFAULT_COMPACT_AT
    recovery: RecoveryState = field(default_factory=RecoveryState.initial)
    delegation: Delegator | None = None
    link: SideLink | None = None
    mirror: Mirror | None = None

    def __post_init__(self) -> None:
        self.steering = SteeringQueue(self.turn_id, self.thread_id)
        self.tool_specs = self.catalogue()
        if self.disable_user_input:
            self.storm = StormBreaker(exempt=frozenset())
        # An observing host (kun.observe) traces every run built on it, of any kind.
        bind_turn = getattr(self.tools, "bind_turn", None)
        if bind_turn is not None:
            bind_turn(self)

    def catalogue(self) -> tuple[ToolSpec, ...]:
        """The tools this turn may offer: the host's, without
        ``delegate_task`` where it cannot delegate, and on a side thread
        only those its link names (never more than its parent had)."""
        specs = self.tools.specs(user_input=not self.disable_user_input)
        if self.delegation is None or not self.delegation.can_delegate(self):
            specs = tuple(s for s in specs if s.name != DELEGATE_TOOL)
        if self.link is not None:
            allowed = set(self.link.tools)
            specs = tuple(s for s in specs if s.name in allowed)
        return specs
