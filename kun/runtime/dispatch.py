"""Tool dispatch (SPEC §6.3): batches, approvals, execution, results in order.

Sequential by default. Consecutive read-only built-ins that the approval
policy lets run without asking form parallel batches of at most three; a
batch runs concurrently and its results are persisted in call order, and if
the batch is aborted every result that was already computed is still
persisted. Errors are wrapped in three layers: recoverable dispatch errors
(unknown tool, bad arguments, denied) and a crashing tool become ``is_error``
results the model can act on (the tool host does this); only abort travels up.

Where the policy asks, a call covered by the thread's allow rules (the
user's "always", :mod:`kun.tools.allow`) runs without asking. An approval
records a one-line summary of the call and, for a file write, the diff it
would make (:mod:`kun.tools.preview`), both scrubbed of known secrets.

The tool ledger, at one fsync per tool step. A call may have run only if its
``tool_call_started`` is durable, so reconciliation settles it
``unknown_after_crash`` rather than running it again; that append is the one
fsync. Everything else in the step is appended with ``durable=False`` and
made durable by it or by the next durable write: the step's closing batch
(the call's ``item_created``) is flushed by the ``tool_call_started``,
``approval_requested`` or storm record that comes before any tool runs; a
result (``tool_call_finished`` + ``item_completed``) by the next call's
``tool_call_started``, an approval, the next step's closing batch or the
turn's settling, and at the latest when the turn ends (the TurnService syncs
the log then). The log is a file synced as a whole, so what becomes durable
is always a prefix: a machine crash can lose a result the provider was
already sent, and then the call reads ``unknown_after_crash`` (it ran; its
effects may or may not be there), never re-run and never a result without
its start.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
from msgspec import UNSET

from kun.contracts import events as ev
from kun.contracts.items import ToolCall, ToolResult
from kun.contracts.threads import Goal, Todo
from kun.domain.goals import exempt_with_goal
from kun.domain.suspension import Suspension
from kun.ids import new_id, new_thread_local_id
from kun.runtime.context import DELEGATE_TOOL, TurnRun, draft
from kun.runtime.mirror import mirrored, refuse_outside_link
from kun.runtime.plan import plan_recorder, refuse_outside_plan
from kun.runtime.sidefiles import keep_attachments
from kun.tools.allow import allows
from kun.tools.approval import Decision, decide, strictest
from kun.tools.base import ToolContext, ToolEffect, ToolOutput
from kun.tools.builtin.user_input import answer_output
from kun.tools.preview import proposed_diff, summary

__all__ = [
    "PARALLEL_READ_CAP",
    "READ_ONLY_BUILTINS",
    "dispatch",
    "dispatch_own",
    "plan_batches",
    "resume_suspended",
    "tool_context",
]

READ_ONLY_BUILTINS = frozenset({"read_file", "list_dir", "glob", "grep"})
PARALLEL_READ_CAP = 3
_SHIELD_SECONDS = 10.0


def plan_batches(run: TurnRun, calls: list[ToolCall]) -> list[list[ToolCall]]:
    """Group ``calls`` into batches, order kept: runs of parallel-safe
    read-only calls (at most three each), runs of ``delegate_task`` calls
    (all of them: each works on its own side thread, and the delegation's
    semaphore bounds how many run at once), every other call alone."""
    batches: list[list[ToolCall]] = []
    for call in calls:
        lane = _lane(run, call)
        last = batches[-1] if batches else None
        if (
            lane is not None
            and last is not None
            and _lane(run, last[0]) == lane
            and (lane == "delegate" or len(last) < PARALLEL_READ_CAP)
        ):
            last.append(call)
        else:
            batches.append([call])
    return batches


def _lane(run: TurnRun, call: ToolCall) -> str | None:
    """``read`` or ``delegate`` for a call that may join a parallel batch."""
    if call.name in READ_ONLY_BUILTINS and _policies_allow(run, "read"):
        return "read"
    if call.name == DELEGATE_TOOL and run.delegation is not None:
        return "delegate"
    return None


async def dispatch(run: TurnRun, calls: list[ToolCall]) -> None:
    for batch in plan_batches(run, calls):
        if run.aborted:
            return
        if len(batch) == 1:
            await _persist(run, batch[0], await _run_one(run, batch[0]))
        else:
            await _run_batch(run, batch)


async def _run_batch(run: TurnRun, batch: list[ToolCall]) -> None:
    outputs: list[ToolOutput | None] = [None] * len(batch)

    async def one(i: int) -> None:
        outputs[i] = await _run_one(run, batch[i])

    try:
        async with anyio.create_task_group() as tg:
            for i in range(len(batch)):
                tg.start_soon(one, i)
    finally:
        with anyio.move_on_after(_SHIELD_SECONDS, shield=True):
            for call, output in zip(batch, outputs, strict=True):
                if output is not None:
                    await _persist(run, call, output)


async def _run_one(run: TurnRun, call: ToolCall) -> ToolOutput:
    """Run ``call`` unless something refuses it first. A refused call is
    still shown to the storm breaker (:mod:`kun.runtime.storm`): a model
    repeating a call plan mode or the policy refuses is looping too. Only a
    call that may run can change files, clearing the breaker's reads."""
    effect = run.tools.effect(call.name)
    call_args = bytes(call.arguments)
    refused = refuse_outside_plan(run, call.name) or refuse_outside_link(run, call.name)
    verdict = _verdict(run, call.name, effect, call_args)
    repeats = run.storm.admit(
        call.name,
        call_args,
        read_only=effect == "read",
        changes_files=refused is None and verdict != "deny" and effect in ("write", "exec"),
    )
    if repeats:
        return await _suppressed(run, call, repeats)
    if refused is not None:
        return refused
    if verdict == "deny":
        return ToolOutput(
            output=f"The approval policy {run.policy!r} does not allow {call.name} "
            f"({effect} tools). Do not retry it; use another way or tell the user what is needed.",
            is_error=True,
            code="denied_by_policy",
        )
    if verdict == "ask":
        approved, reason = await _ask_approval(run, call)
        if not approved:
            return _denied(call, reason)
    return await _execute(run, call)


def _policies_allow(run: TurnRun, effect: ToolEffect) -> bool:
    """Whether the run's policy and those above it (a sub-agent's) let a
    call of ``effect`` run without asking."""
    ceilings = run.link.ceilings if run.link is not None else ()
    return all(decide(p, effect) == "allow" for p in (run.policy, *ceilings))


def _verdict(run: TurnRun, name: str, effect: ToolEffect | None, arguments: bytes) -> Decision:
    """The policy's ``allow``, ``ask`` or ``deny`` for the call; the
    thread's allow rules and an active goal's own tools make ``ask`` allow."""
    verdict = decide(run.policy, effect) if effect is not None else "allow"
    if run.link is not None and effect is not None:
        verdict = strictest(verdict, *(decide(c, effect) for c in run.link.ceilings))
    settings = run.state().settings
    if verdict == "ask" and (
        allows(settings.allow_rules, name, arguments) or exempt_with_goal(settings.goal, name)
    ):
        verdict = "allow"
    return verdict


async def _suppressed(run: TurnRun, call: ToolCall, repeats: int) -> ToolOutput:
    await run.write(
        draft(
            ev.ToolStormSuppressed,
            run.turn_id,
            call_id=call.call_id,
            name=call.name,
            repeats=repeats,
        )
    )
    return ToolOutput(
        output=f"Not run: this is call number {repeats} of {call.name} with the same "
        "arguments in a row. You already have its answer above; continue from it.",
        is_error=True,
        code="tool_storm_suppressed",
    )


def _denied(call: ToolCall, reason: str | None) -> ToolOutput:
    why = f" Their reason: {reason}." if reason else ""
    return ToolOutput(
        output=f"The user denied {call.name}.{why} Do not retry the same call.",
        is_error=True,
        code="denied_by_user",
    )


async def dispatch_own(run: TurnRun, call: ToolCall) -> None:
    """Run a call kun made itself (the plan materialised from the model's
    prose, :mod:`kun.runtime.rounds`) with the ledger and result of any
    call, but never through the approval policy or the storm breaker: they
    guard what the model asks for, and the user cannot usefully approve
    kun's own bookkeeping."""
    await _persist(run, call, await _execute(run, call, own=True))


async def _execute(run: TurnRun, call: ToolCall, *, own: bool = False) -> ToolOutput:
    await run.write(
        draft(
            ev.ToolCallStarted, run.turn_id, item_id=call.id, call_id=call.call_id, name=call.name
        )
    )
    context = tool_context(run, call, own=own)
    return await run.tools.execute(call.name, bytes(call.arguments), context)


def tool_context(run: TurnRun, call: ToolCall, *, own: bool = False) -> ToolContext:
    """What a tool of ``run`` gets to work with: the thread's todos, goal,
    plan and questions wired to the turn's log. Also the context of kun's
    tools bridged to a delegated engine (:mod:`kun.runtime.agent_sdk.bridge`)."""
    return ToolContext(
        workspace=run.workspace,
        thread_id=run.thread_id,
        turn_id=run.turn_id,
        call_id=call.call_id,
        ask_user=None if run.disable_user_input else _asker(run),
        get_todos=lambda: run.state().settings.todos,
        set_todos=_todo_setter(run),
        record_plan=plan_recorder(run, from_reply=own),
        get_goal=lambda: run.state().settings.goal,
        set_goal=_goal_setter(run),
        save_side_file=None if run.side_files is None else run.side_files.blobs.put,
        approval_policy=run.policy,
        delegate=_delegate(run, call),
    )


def _delegate(
    run: TurnRun, call: ToolCall
) -> Callable[[str, str | None], Awaitable[ToolOutput]] | None:
    delegation = run.delegation
    if delegation is None or not delegation.can_delegate(run):
        return None

    async def delegate(task: str, agent: str | None) -> ToolOutput:
        return await delegation.delegate(run, call.id, call.call_id, task, agent)

    return delegate


async def _ask_approval(run: TurnRun, call: ToolCall) -> tuple[bool, str | None]:
    approval_id = new_id("apr")
    arguments = bytes(call.arguments)
    diff = await anyio.to_thread.run_sync(proposed_diff, run.workspace, call.name, arguments)
    requested = draft(
        ev.ApprovalRequested,
        run.turn_id,
        approval_id=approval_id,
        call_id=call.call_id,
        tool_name=call.name,
        summary=run.tools.redact(summary(call.name, arguments)),
        diff=run.tools.redact(diff) or UNSET,
    )
    await run.write(requested)
    async with mirrored(run, requested) as answer:
        status, reason = await run.approvals.wait(approval_id, run.thread_id, run.turn_id)
        answer.append(
            draft(ev.ApprovalResolved, approval_id=approval_id, decision=status, reason=reason)
        )
    return status == "approved", reason


async def resume_suspended(run: TurnRun, suspension: Suspension) -> None:
    """Go on from where a re-armed turn waited (:mod:`kun.domain.suspension`):
    wait again for the same approval or question, then finish its step as
    :func:`dispatch` would have. An approved call runs here, once: it had not
    started. A question's call had started; its answer is its result."""
    call = suspension.call
    if suspension.kind == "approval":
        status, reason = await run.approvals.wait(suspension.pending_id, run.thread_id, run.turn_id)
        output = await _execute(run, call) if status == "approved" else _denied(call, reason)
    else:
        status, answer = await run.questions.wait(suspension.pending_id, run.thread_id, run.turn_id)
        output = answer_output(answer if status == "answered" else None)
    await _persist(run, call, output)
    await dispatch(run, list(suspension.rest))


def _asker(run: TurnRun) -> Callable[[str, tuple[str, ...]], Awaitable[str | None]]:
    async def ask(question: str, options: tuple[str, ...]) -> str | None:
        request_id = new_id("ask")
        requested = draft(
            ev.UserInputRequested,
            run.turn_id,
            request_id=request_id,
            question=question,
            options=options,
        )
        await run.write(requested)
        async with mirrored(run, requested) as resolved:
            status, answer = await run.questions.wait(request_id, run.thread_id, run.turn_id)
            resolved.append(
                draft(ev.UserInputResolved, request_id=request_id, status=status, answer=answer)
            )
        return answer if status == "answered" else None

    return ask


def _goal_setter(run: TurnRun) -> Callable[[Goal | None], Awaitable[None]]:
    async def set_goal(goal: Goal | None) -> None:
        await run.write(draft(ev.ThreadUpdated, goal=goal))

    return set_goal


def _todo_setter(run: TurnRun) -> Callable[[tuple[Todo, ...]], Awaitable[None]]:
    async def set_todos(todos: tuple[Todo, ...]) -> None:
        await run.write(draft(ev.ThreadUpdated, todos=todos))

    return set_todos


async def _persist(run: TurnRun, call: ToolCall, output: ToolOutput) -> None:
    """The call's end and its result, appended together and group committed
    (see the module docstring). A big output is put in a side file first
    (:mod:`kun.runtime.sidefiles`), and so are its attachments' bytes, so
    the result never names a missing one."""
    text, ref, attachments = output.output, None, output.attachments
    if run.side_files is not None:
        text, ref = await run.side_files.spill(output.output)
        attachments = await keep_attachments(run.side_files.blobs, attachments)
    result = ToolResult(
        id=new_thread_local_id("res"),
        call_id=call.call_id,
        name=call.name,
        output=text,
        output_ref=ref,
        is_error=output.is_error,
        code=output.code,
        attachments=attachments,
        diff=output.diff,
        checkpoint=output.checkpoint,
    )
    await run.write(
        draft(
            ev.ToolCallFinished,
            run.turn_id,
            item_id=call.id,
            call_id=call.call_id,
            status="failed" if output.is_error else "completed",
        ),
        draft(ev.ItemCompleted, run.turn_id, item=result),
        durable=False,
    )
