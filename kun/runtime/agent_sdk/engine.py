"""A whole turn run by the Claude Agent SDK (SPEC §6.1 step 2, §9).

:func:`run_delegated_turn` takes the place of kun's loop for a thread whose
provider is of ``kind = "agent-sdk"``. kun keeps what it always keeps: the
canonical history (everything the SDK did, mapped into kun's events by
:mod:`~kun.runtime.agent_sdk.mapper`), approvals (``can_use_tool`` →
:mod:`~kun.runtime.agent_sdk.permissions`), its own tools
(:mod:`~kun.runtime.agent_sdk.bridge`), steering and interrupts. The SDK
keeps its loop, its built-in tools and its session.

One turn:

1. Decide resume or rebase from the thread's state
   (:func:`kun.domain.delegated.resume_or_rebase`) and record it
   (``delegated_runtime``).
2. Compose the prompt (:mod:`~kun.runtime.agent_sdk.rebase`): the history
   transcript when rebasing, the turn's instructions, the request.
3. Start the SDK client with the turn's options
   (:mod:`~kun.runtime.agent_sdk.options`), send the prompt, and record
   every message as it comes.
4. Steering goes to the running session as a further user message (each
   with a uuid, so the engine knows when the SDK has taken it in) and into
   the log as a steered user message; an interrupt (the turn's scope
   cancelled) becomes the SDK's ``interrupt()`` before the client closes.
5. A completed turn commits its session as the thread's checkpoint
   (``delegated_checkpoint``), which the next turn may resume; a commit
   that fails is a warning in the process log and a rebase next turn.

A resumed turn whose session is not there any more (kun's log moved to
another worker or machine, ``~/.claude`` was cleaned) fails before saying
anything; it is then run once more, rebased, and a second
``delegated_runtime`` says why.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import anyio
import msgspec

from kun.contracts import events as ev
from kun.contracts.items import ToolCall, ToolResult, UserMessage
from kun.contracts.model import ModelRequest
from kun.domain.delegated import resume_or_rebase
from kun.domain.state import TurnState
from kun.ids import new_thread_local_id
from kun.model.delegated import ENGINE, AgentSdkSettings
from kun.runtime.agent_sdk.bridge import SERVER_NAME, CallIds, bridge_tools, bridgeable
from kun.runtime.agent_sdk.mapper import SdkEventMapper, SdkOutcome
from kun.runtime.agent_sdk.messages import ResultMessage, from_sdk
from kun.runtime.agent_sdk.options import sdk_options
from kun.runtime.agent_sdk.permissions import decide_permission
from kun.runtime.agent_sdk.rebase import (
    compose_prompt,
    history_transcript,
    prior_history,
    request_text,
)
from kun.runtime.agent_sdk.sdk import SdkApi, SdkClient, SdkMissing, load_sdk
from kun.runtime.context import TurnRun, draft
from kun.runtime.loop import ABORTED, Outcome, record_unread_steering
from kun.runtime.project import render_project_context
from kun.runtime.request import build_request

__all__ = ["STEERING_POLL_SECONDS", "run_delegated_turn"]

log = logging.getLogger(__name__)

STEERING_POLL_SECONDS = 0.1
"""How often steering is looked for while the SDK runs (the queue has no
wake-up of its own; a tenth of a second is well under a person's notice)."""
_SHIELD_SECONDS = 10.0


async def run_delegated_turn(run: TurnRun, settings: AgentSdkSettings) -> Outcome:
    """Run the turn on the SDK to its outcome; the caller settles it. As
    :func:`kun.runtime.loop.run_turn`: never raises but for cancellation
    from outside the turn's own scope."""
    outcome = Outcome("failed", code="internal_error", message="the turn did not finish")
    api: SdkApi | None = None
    with run.scope:
        try:
            api = load_sdk(settings.sdk)
            outcome = await _run(run, settings, api)
            if outcome.status != "completed" and not run.aborted:
                await record_unread_steering(run)
        except SdkMissing as missing:
            outcome = Outcome("failed", code="agent_sdk_missing", message=str(missing))
        except Exception as group:
            error = _sole(group)
            code = api.failure_code(error) if api is not None else None
            outcome = Outcome(
                "failed",
                code=code or "internal_error",
                message=f"[kun delegated turn failed] turn={run.turn_id} engine={ENGINE} "
                f"model={settings.model} provider={settings.provider} "
                f"error={type(error).__name__}: {error}",
            )
    if run.scope.cancelled_caught or run.aborted:
        try:
            await record_unread_steering(run)
        except Exception:
            log.debug("unread steering of an aborted delegated turn was not recorded")
        return ABORTED
    return outcome


def _sole(exc: BaseException) -> BaseException:
    """The one error a task group wrapped (the session's message loop and
    its steering task run in one), so it is classified by its own type."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def _run(run: TurnRun, settings: AgentSdkSettings, api: SdkApi) -> Outcome:
    state = run.state()
    turn = next(t for t in state.turns if t.turn_id == run.turn_id)
    request = build_request(run, state)
    decision = resume_or_rebase(
        state,
        run.turn_id,
        engine=ENGINE,
        provider=settings.provider,
        workspace=str(run.workspace),
    )
    transcript = ""
    if decision.mode == "rebased":
        transcript = history_transcript(prior_history(state, run.turn_id))
    prompt = compose_prompt(transcript, request.context_instructions, request_text(turn.items))
    await run.write(
        draft(
            ev.DelegatedRuntime,
            run.turn_id,
            engine=ENGINE,
            mode=decision.mode,
            reason=decision.reason,
            session_id=decision.session_id,
        )
    )
    if settings.effort is None and request.reasoning_effort is not None:
        settings = replace(settings, effort=request.reasoning_effort)
    outcome, said = await _attempt(run, settings, api, turn, request, prompt, decision.session_id)
    if decision.mode == "resumed" and outcome.status == "failed" and not said and not run.aborted:
        # The session is not there to resume (another worker's disk, a
        # cleaned ~/.claude): nothing was said, so rebase on kun's history.
        await run.write(
            draft(
                ev.DelegatedRuntime,
                run.turn_id,
                engine=ENGINE,
                mode="rebased",
                reason=f"the session could not be resumed: {outcome.message}"[:500],
            )
        )
        transcript = history_transcript(prior_history(state, run.turn_id))
        prompt = compose_prompt(transcript, request.context_instructions, request_text(turn.items))
        outcome, _ = await _attempt(run, settings, api, turn, request, prompt, None)
    return _outcome(run, outcome)


async def _attempt(
    run: TurnRun,
    settings: AgentSdkSettings,
    api: SdkApi,
    turn: TurnState,
    request: ModelRequest,
    prompt: str,
    resume: str | None,
) -> tuple[SdkOutcome, bool]:
    """One SDK client's run of the turn: its outcome, and whether it said
    anything (recorded more than its usage). A completed run commits its
    session as the thread's checkpoint."""
    ids = CallIds()
    options = _options(run, settings, api, turn, resume, request.tools, ids)
    client = api.client(options)
    mapper = SdkEventMapper(run.turn_id, provider=settings.provider, model=settings.model)
    session = _Session(run, client, mapper, ids)
    await client.connect()
    try:
        await session.send(prompt)
        outcome = await session.follow()
    finally:
        with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
            if run.aborted or run.scope.cancel_called:
                await _quietly(client.interrupt())
            await _quietly(client.disconnect())
    if outcome.status == "completed" and mapper.session_id:
        await _commit(run, settings, mapper.session_id)
    return outcome, session.said


def _options(
    run: TurnRun,
    settings: AgentSdkSettings,
    api: SdkApi,
    turn: TurnState,
    resume: str | None,
    tools: Any,
    ids: CallIds,
) -> dict[str, Any]:
    bridged = bridgeable(tools)
    names = frozenset(spec.name for spec in bridged)

    async def can_use_tool(name: str, tool_input: dict[str, Any], context: Any) -> Any:
        tool_use_id = getattr(context, "tool_use_id", None)
        answer = await decide_permission(
            run, name, tool_input, tool_use_id, bridged=names, plan_mode=turn.plan_mode
        )
        if answer.allow and name.startswith("mcp__kun__"):
            ids.allowed(name.removeprefix("mcp__kun__"), tool_use_id)
        return api.permission(answer)

    servers = {}
    if bridged:
        servers[SERVER_NAME] = api.mcp_server(SERVER_NAME, bridge_tools(run, bridged, ids))
    context = run.context
    return sdk_options(
        settings,
        workspace=run.workspace,
        environ=os.environ,
        limits=run.limits,
        plan_mode=turn.plan_mode,
        resume=resume,
        system_append=render_project_context(context) if context is not None else None,
        mcp_servers=servers,
        can_use_tool=can_use_tool,
    )


class _Session:
    """The running SDK session of one turn: messages in, steering out."""

    def __init__(
        self, run: TurnRun, client: SdkClient, mapper: SdkEventMapper, ids: CallIds
    ) -> None:
        self.run = run
        self.client = client
        self.mapper = mapper
        self.ids = ids
        self.unanswered: set[str] = set()
        self.said = False
        """Whether anything but usage was recorded."""

    async def send(self, text: str) -> None:
        """Send ``text`` as a user message the SDK will list as taken in."""
        message_id = str(uuid.uuid4())
        self.unanswered.add(message_id)
        await self.client.query(_one(_user_message(text, message_id)))

    async def follow(self) -> SdkOutcome:
        """Record the SDK's messages until its query is answered and no
        steering waits; the outcome of the last result."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._steer)
            outcome = await self._messages()
            tg.cancel_scope.cancel()
        return outcome

    async def _messages(self) -> SdkOutcome:
        mapper = self.mapper
        async for raw in self.client.receive_messages():
            message = from_sdk(raw)
            if message is None:
                continue
            events = [await self._spilled(event) for event in mapper.feed(message)]
            if events:
                await self.run.write(*events)
                self.said = self.said or any(not isinstance(e, ev.Usage) for e in events)
                for event in events:
                    if isinstance(event, ev.ItemCreated) and isinstance(event.item, ToolCall):
                        self.ids.recorded(event.item.call_id, event.item.id)
            if not isinstance(message, ResultMessage):
                continue
            taken = getattr(raw, "user_message_uuids", None)
            if taken is None:
                self.unanswered.clear()
            else:
                self.unanswered.difference_update(taken)
            assert mapper.outcome is not None
            if self.unanswered and mapper.outcome.status == "completed":
                continue
            if mapper.outcome.status == "completed" and not self.run.steering.close_if_empty():
                await self._send_steering()
                continue
            return mapper.outcome
        events = mapper.close("failed")
        if events:
            await self.run.write(*events)
        return SdkOutcome(
            "failed",
            code="agent_sdk_no_result",
            message="the Claude Agent SDK stopped before it answered (its process ended)",
        )

    async def _spilled(self, event: ev.Event) -> ev.Event:
        """A tool result too big for a log line kept in a side file, as a
        native call's is (:mod:`kun.runtime.sidefiles`): the SDK's ``Read``
        of a large file must not make a megabyte line."""
        side_files = self.run.side_files
        if (
            side_files is None
            or not isinstance(event, ev.ItemCompleted)
            or not isinstance(event.item, ToolResult)
        ):
            return event
        text, ref = await side_files.spill(event.item.output)
        if ref is None:
            return event
        return msgspec.structs.replace(
            event, item=msgspec.structs.replace(event.item, output=text, output_ref=ref)
        )

    async def _steer(self) -> None:
        while True:
            await anyio.sleep(STEERING_POLL_SECONDS)
            await self._send_steering()

    async def _send_steering(self) -> None:
        entries = self.run.steering.drain()
        if not entries:
            return
        ids = [str(uuid.uuid4()) for _ in entries]
        self.unanswered.update(ids)
        items = [
            UserMessage(id=new_thread_local_id("msg"), text=text, steered=True) for text in entries
        ]
        await self.run.write(*(draft(ev.ItemCompleted, self.run.turn_id, item=i) for i in items))
        for text, message_id in zip(entries, ids, strict=True):
            await self.client.query(_one(_user_message(text, message_id)))


def _user_message(text: str, message_id: str) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {"role": "user", "content": text},
        "parent_tool_use_id": None,
        "uuid": message_id,
    }


async def _one(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    yield message


async def _quietly(step: Any) -> None:
    """Await a clean-up step whose failure changes nothing (the process is
    going away either way)."""
    try:
        await step
    except Exception as exc:
        log.debug("SDK clean-up step failed: %r", exc)


async def _commit(run: TurnRun, settings: AgentSdkSettings, session_id: str) -> None:
    """Commit the session as the thread's checkpoint; a failure only means
    the next turn rebases, so it never fails this one."""
    try:
        await run.write(
            draft(
                ev.DelegatedCheckpoint,
                run.turn_id,
                engine=ENGINE,
                session_id=session_id,
                provider=settings.provider,
                workspace=str(run.workspace),
            )
        )
    except Exception as exc:
        log.warning("the SDK session checkpoint was not committed; next turn rebases: %r", exc)


def _outcome(run: TurnRun, sdk: SdkOutcome) -> Outcome:
    """The turn's outcome. An interruption kun did not ask for (the SDK's
    own) fails the turn: only kun's interrupt records an abort."""
    if sdk.status == "completed":
        return Outcome("completed", stop_reason=sdk.stop_reason)
    if sdk.status == "aborted":
        if run.aborted:
            return ABORTED
        return Outcome(
            "failed",
            code="agent_sdk_interrupted",
            message="the Claude Agent SDK stopped the turn as interrupted, not asked by kun",
        )
    return Outcome("failed", code=sdk.code, message=sdk.message)
