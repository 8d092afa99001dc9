"""Thread settings: what a thread is configured to do."""

from __future__ import annotations

import shlex
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

ApprovalPolicy = Literal["never", "on-request", "untrusted", "always", "auto", "full-auto"]
GoalStatus = Literal["active", "paused", "blocked", "complete"]
TodoStatus = Literal["pending", "in_progress", "completed"]
TitleSource = Literal["prompt", "model", "user"]
"""Who wrote a thread's title: taken from the first prompt, written by a
model, or set by the user (which nothing automatic replaces)."""


class Goal(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An objective that outlives a single turn.

    ``time_used_ms`` and ``tokens_used`` are charged by the reducer from the
    turns that ran while the goal was active (:mod:`kun.domain.goals`), so
    a replay gives the same numbers. ``tokens_used`` is unset until the
    first charge, so a goal written before it existed is written as before;
    read it through :func:`kun.domain.goals.tokens_used`."""

    objective: str
    status: GoalStatus = "active"
    token_budget: int | None = None
    created_at: int = 0
    time_used_ms: int = 0
    tokens_used: int | UnsetType = UNSET

    @property
    def tokens(self) -> int:
        """``tokens_used``, 0 when unset."""
        used = self.tokens_used
        return used if isinstance(used, int) else 0

    @property
    def budget_exhausted(self) -> bool:
        """The goal has a token budget and has used all of it."""
        return self.token_budget is not None and self.tokens >= self.token_budget

    def usage_line(self) -> str:
        """``3m 05s · 12,345 tokens of 2,000,000``, with ``(budget spent)``
        when it is: what the goal has used, on one line."""
        budget = f" of {self.token_budget:,}" if self.token_budget is not None else ""
        spent = " (budget spent)" if self.budget_exhausted else ""
        return f"{_duration(self.time_used_ms)} · {self.tokens:,} tokens{budget}{spent}"

    def describe(self) -> str:
        """The goal as ``get_goal`` and ``/goal`` show it: objective, status,
        time and tokens used, and the budget (said to be spent when it is)."""
        if self.token_budget is None:
            budget = "no token budget"
        elif self.budget_exhausted:
            budget = f"token budget {self.token_budget:,} (exhausted)"
        else:
            left = self.token_budget - self.tokens
            budget = f"token budget {self.token_budget:,} ({left:,} left)"
        return (
            f"Objective: {self.objective}\n"
            f"Status: {self.status}\n"
            f"Time used: {_duration(self.time_used_ms)}\n"
            f"Tokens used: {self.tokens:,}; {budget}"
        )


MODEL_GOAL_STATUSES: tuple[GoalStatus, ...] = ("complete", "blocked")
"""The statuses the model may give a goal (``update_goal``): pausing,
resuming and clearing are the user's (or the system's), never the model's."""


def _duration(ms: int) -> str:
    """``2h 05m``, ``3m 07s`` or ``12s``."""
    hours, rest = divmod(ms // 1000, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


class Todo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    content: str
    status: TodoStatus = "pending"


class AllowRule(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A call the user said to always allow on this thread: every call of
    ``tool`` or, when ``prefix`` is given (``bash``), every simple command whose
    first words are ``prefix`` (:mod:`kun.tools.allow` decides what matches)."""

    tool: str
    prefix: tuple[str, ...] = ()

    def describe(self) -> str:
        """``write_file``, or ``bash `git status …```."""
        if not self.prefix:
            return self.tool
        return f"{self.tool} `{shlex.join(self.prefix)} …`"


class SideLink(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Where a side thread comes from and what it may do: the parent's
    thread, turn and ``delegate_task`` call that spawned it, the agent
    profile it runs (``None``: the default read-only helper), its depth
    (1 for a parent's own child), the tools it may use (never more than the
    parent had) and the approval policies it runs under besides its own
    (the parent's, and the parent's own ceilings): a call runs only where
    every one of them lets it. Recorded at creation, so a replay, a re-armed
    turn and a restarted server apply the same limits."""

    thread_id: str
    turn_id: str
    call_id: str
    agent: str | None = None
    depth: int = 1
    tools: tuple[str, ...] = ()
    ceilings: tuple[ApprovalPolicy, ...] = ()


class ThreadSettings(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The settings a thread is created with; ``thread_updated`` changes them.

    ``hidden`` marks side threads (delegated sub-agents) that are not listed by
    default; ``parent_thread_id`` names the thread that spawned one, and
    ``link`` (unset in every other thread, so their lines read as before)
    the call and the limits it runs under (:class:`SideLink`).
    ``always_allow`` lists the calls the user approved "always for this
    thread": they run without asking where the policy would ask (never where
    it denies). Unset until the first one, so a thread without any is
    written as before; read it through :attr:`allow_rules`.
    ``title_source`` says who wrote the title (:mod:`kun.domain.titles`); it
    is unset until a title has one, so a thread that never got one is
    written as before.
    """

    workspace: str = ""
    provider: str | None = None
    model: str | None = None
    approval_policy: ApprovalPolicy = "on-request"
    title: str = "New Thread"
    title_auto: bool = True
    title_source: TitleSource | UnsetType = UNSET
    goal: Goal | None = None
    todos: tuple[Todo, ...] = ()
    hidden: bool = False
    parent_thread_id: str | None = None
    always_allow: tuple[AllowRule, ...] | UnsetType = UNSET
    link: SideLink | UnsetType = UNSET

    @property
    def side_link(self) -> SideLink | None:
        """``link``, ``None`` for a thread that is not a side thread."""
        link = self.link
        return None if isinstance(link, UnsetType) else link

    @property
    def allow_rules(self) -> tuple[AllowRule, ...]:
        """``always_allow``, empty when unset."""
        rules = self.always_allow
        return () if isinstance(rules, UnsetType) else rules
