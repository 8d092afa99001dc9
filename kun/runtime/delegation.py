"""Sub-agents: ``delegate_task`` runs a task as a turn on a hidden side
thread, and the side thread's final answer is the call's result (SPEC §6.3,
issue 22).

A side thread is a thread like any other (its own log, replayable, usage
priced), created hidden with a :class:`~kun.contracts.threads.SideLink` to
the call that spawned it: the parent's thread, turn and call, the agent
profile, its depth, the tools it may use and the policies above its own.
The parent's log links the call to it (``subagent_started``) before the
side thread exists, so nothing is ever spawned that the parent does not
name.

What a sub-agent may do never exceeds its parent: its tools are its
profile's (the read-only helper's by default) cut to the tools the parent
had, and each of its calls runs only where its own policy and every policy
above it allow (:func:`kun.tools.approval.strictest`). It cannot delegate
past the depth limit (``[runtime] max_agent_depth``, 1 by default: a
sub-agent does not delegate). Its approvals and questions are shown in the
parent's turn (:mod:`kun.runtime.mirror`). Interrupting the parent
interrupts it. Several calls in one step run at once (a delegation batch,
:func:`kun.runtime.dispatch.plan_batches`); a semaphore per depth
(``[runtime] max_parallel_agents``, 4) bounds how many side threads run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import anyio

from kun.contracts import events as ev
from kun.contracts.items import AssistantText
from kun.contracts.threads import ApprovalPolicy, SideLink, ThreadSettings
from kun.domain.state import TurnState
from kun.domain.titles import title_from_prompt
from kun.errors import KunError
from kun.ids import new_id
from kun.model.port import ModelClient
from kun.runtime.context import DELEGATE_TOOL, TurnRun, draft
from kun.runtime.errors import TurnNotRunning
from kun.runtime.service import TurnService
from kun.tools.base import ToolOutput

__all__ = [
    "DEFAULT_AGENT_TOOLS",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_PARALLEL",
    "AgentProfile",
    "Delegation",
]

_log = logging.getLogger(__name__)
_SHIELD_SECONDS = 10.0

DEFAULT_AGENT_TOOLS = ("glob", "grep", "list_dir", "read_file")
"""The tools of a sub-agent run without a profile: reading only."""
DEFAULT_MAX_PARALLEL = 4
DEFAULT_MAX_DEPTH = 1

UNKNOWN_AGENT = "unknown_agent"
TOO_DEEP = "delegation_too_deep"
FAILED = "subagent_failed"
ABORTED = "subagent_aborted"

SUBAGENT_PROMPT = (
    "You are a sub-agent: another agent handed you one focused task. You see only the task, "
    "not its conversation. Do the task with the tools you have, then answer: your final "
    "message is all the other agent will get back, so make it complete and self-contained "
    "(findings, paths, what you changed, what you could not do). Nobody else reads it."
)


@dataclass(frozen=True)
class AgentProfile:
    """``[agents.NAME]``: what a sub-agent of that name runs with.
    ``provider``/``model`` default to the parent's; ``tools`` to the
    read-only set (:data:`DEFAULT_AGENT_TOOLS`); ``approval_policy`` to the
    parent's (the parent's always bounds it)."""

    name: str
    description: str = ""
    provider: str | None = None
    model: str | None = None
    system_prompt: str = ""
    tools: tuple[str, ...] | None = None
    approval_policy: ApprovalPolicy | None = None


ModelFor = Callable[[str | None, str | None], ModelClient]
"""A client for a provider and model (``None``: the configured default)."""


class Delegation:
    """Runs the ``delegate_task`` calls of one TurnService's turns."""

    def __init__(
        self,
        service: TurnService,
        *,
        agents: Mapping[str, AgentProfile] | None = None,
        models: ModelFor | None = None,
        max_parallel: int = DEFAULT_MAX_PARALLEL,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        self.service = service
        self.agents = dict(agents or {})
        self.models = models
        self.max_parallel = max_parallel
        self.max_depth = max_depth
        self._slots: dict[int, anyio.Semaphore] = {}

    def can_delegate(self, run: TurnRun) -> bool:
        return _depth(run) < self.max_depth

    def system_prompt(self, link: SideLink, base: str) -> str:
        profile = self.agents.get(link.agent) if link.agent is not None else None
        own = profile.system_prompt if profile is not None else ""
        return "\n\n".join(part for part in (base, SUBAGENT_PROMPT, own) if part)

    async def delegate(
        self, run: TurnRun, item_id: str, call_id: str, task: str, agent: str | None
    ) -> ToolOutput:
        """Run ``task`` on a new side thread of ``run``'s thread and return
        its answer. A refusal (unknown agent, too deep, a model that is not
        configured) is an error result the model can act on."""
        profile = self.agents.get(agent) if agent is not None else AgentProfile(name="")
        if profile is None:
            names = ", ".join(sorted(self.agents)) or "none are configured"
            return _error(
                UNKNOWN_AGENT,
                f"There is no agent profile named {agent!r} (profiles: {names}). "
                "Leave `agent` out for a read-only helper.",
            )
        depth = _depth(run) + 1
        if depth > self.max_depth:
            return _error(
                TOO_DEEP,
                f"Sub-agents may not delegate further (depth limit {self.max_depth}). "
                "Do the task yourself.",
            )
        try:
            model = self._model(run, profile)
        except KunError as exc:
            return _error(FAILED, f"The agent {agent!r} cannot run here: {exc}")
        async with self._slot(depth):
            return await self._run(run, item_id, call_id, task, profile, model, depth)

    async def _run(
        self,
        run: TurnRun,
        item_id: str,
        call_id: str,
        task: str,
        profile: AgentProfile,
        model: ModelClient,
        depth: int,
    ) -> ToolOutput:
        side = new_id("thr")
        agent = profile.name or None
        await run.write(
            draft(
                ev.SubagentStarted,
                run.turn_id,
                item_id=item_id,
                call_id=call_id,
                side_thread=side,
                agent=agent,
            )
        )
        parent = run.state().settings
        link = SideLink(
            thread_id=run.thread_id,
            turn_id=run.turn_id,
            call_id=call_id,
            agent=agent,
            depth=depth,
            tools=self._tools(run, profile, depth),
            ceilings=(*(run.link.ceilings if run.link is not None else ()), run.policy),
        )
        settings = ThreadSettings(
            workspace=parent.workspace,
            provider=model.provider,
            model=model.model,
            approval_policy=profile.approval_policy or run.policy,
            title=f"{agent or 'sub-agent'}: {title_from_prompt(task)}",
            title_auto=False,
            hidden=True,
            parent_thread_id=run.thread_id,
            link=link,
        )
        try:
            await self.service.create_thread(settings, thread_id=side)
            turn_id = await self.service.start_turn(
                side,
                task,
                disable_user_input=run.disable_user_input,
                model=model,
                limits=run.limits,
                reasoning_effort=run.reasoning_effort,
            )
        except KunError as exc:
            return _error(FAILED, f"The sub-agent could not start: {exc}")
        try:
            turn = await self.service.wait_turn(side, turn_id)
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
                await self._interrupt(side, turn_id)
            raise
        return answer(turn, side)

    async def _interrupt(self, side: str, turn_id: str) -> None:
        try:
            await self.service.interrupt_turn(side, turn_id)
        except TurnNotRunning:
            pass
        except Exception:
            _log.exception("interrupting turn %s of side thread %s failed", turn_id, side)

    def _model(self, run: TurnRun, profile: AgentProfile) -> ModelClient:
        if (profile.provider is None and profile.model is None) or self.models is None:
            return run.model
        return self.models(profile.provider or run.model.provider, profile.model)

    def _tools(self, run: TurnRun, profile: AgentProfile, depth: int) -> tuple[str, ...]:
        """The profile's tools that the parent has too; ``delegate_task``
        only while the side thread may still delegate."""
        wanted = DEFAULT_AGENT_TOOLS if profile.tools is None else profile.tools
        had = {spec.name for spec in run.tool_specs}
        return tuple(
            sorted(
                name
                for name in set(wanted)
                if name in had and (name != DELEGATE_TOOL or depth < self.max_depth)
            )
        )

    def _slot(self, depth: int) -> anyio.Semaphore:
        """One semaphore per depth: a parent holding a slot while its
        children wait for theirs would otherwise starve them."""
        slot = self._slots.get(depth)
        if slot is None:
            slot = self._slots[depth] = anyio.Semaphore(self.max_parallel)
        return slot


def answer(turn: TurnState, side: str) -> ToolOutput:
    """The call's result from the side thread's settled turn: its last
    answer, or why there is none."""
    text = next(
        (
            item.text
            for item in reversed(turn.items)
            if isinstance(item, AssistantText) and item.text.strip()
        ),
        "",
    )
    if turn.status == "completed":
        return ToolOutput(output=text or "The sub-agent finished without an answer.")
    said = f"\nWhat it had said:\n{text}" if text else ""
    if turn.status == "aborted":
        return _error(ABORTED, f"The sub-agent was interrupted (side thread {side}).{said}")
    why = f"{turn.error.code}: {turn.error.message}" if turn.error is not None else turn.status
    return _error(FAILED, f"The sub-agent failed ({why}; side thread {side}).{said}")


def _error(code: str, message: str) -> ToolOutput:
    return ToolOutput(output=message, is_error=True, code=code)


def _depth(run: TurnRun) -> int:
    return run.link.depth if run.link is not None else 0
