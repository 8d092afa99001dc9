"""The SDK asks before a tool runs (``can_use_tool``); kun's approval policy
answers, as it does for its own calls.

Each SDK tool is given the effect kun's policy table judges by
(:mod:`kun.tools.approval`): reading tools ``read``; file edits ``write``
while their path is inside the workspace, ``exec`` outside it (kun's own
file tools cannot leave the workspace, the SDK's can, so a write elsewhere
is treated like a command); everything else — ``Bash``, unknown tools —
``exec``. kun's bridged tools (``mcp__kun__<tool>``) carry their own
declared effect. Where the policy asks, the question is a recorded
``approval_requested`` answered from the terminal, the API or the web view
like any approval (``run.approvals.wait``; a sub-agent's shown in its
parent's turn too); the thread's "always" rules and an active goal's own
tools let a call through as they do natively, and a sub-agent's calls are
held to every policy above it, as natively.

Refused outright: the SDK's ``AskUserQuestion`` (kun has no UI for it;
kun's own question tool is bridged instead), and in a plan-mode turn every
tool but kun's bridged plan-mode tools (the SDK's built-ins are switched
off then; one asked for anyway is a model inventing it). A decider that
raises denies (fail safe). An allow carries the input back as
``updated_input``: the SDK's schema requires it although its type says
optional.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from msgspec import UNSET

from kun.contracts import events as ev
from kun.domain.goals import exempt_with_goal
from kun.ids import new_id
from kun.runtime.agent_sdk.mapper import BRIDGE_PREFIX, kun_tool_name
from kun.runtime.context import TurnRun, draft
from kun.runtime.mirror import mirrored
from kun.tools.allow import allows
from kun.tools.approval import decide, strictest
from kun.tools.base import ToolEffect
from kun.tools.preview import summary

__all__ = ["ASK_USER_QUESTION", "Permission", "decide_permission", "sdk_tool_effect"]

log = logging.getLogger(__name__)

ASK_USER_QUESTION = "AskUserQuestion"
READ_TOOLS = frozenset(
    {
        "Read",
        "Glob",
        "Grep",
        "LS",
        "NotebookRead",
        "WebSearch",
        "WebFetch",
        "TodoWrite",
        "ToolSearch",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
    }
)
WRITE_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})


@dataclass(frozen=True)
class Permission:
    """kun's answer: allow with ``updated_input``, or deny with ``message``."""

    allow: bool
    updated_input: dict[str, Any] | None = None
    message: str = ""


def sdk_tool_effect(name: str, tool_input: dict[str, Any], workspace: Path) -> ToolEffect:
    """The effect the policy judges an SDK built-in tool by."""
    if name in READ_TOOLS:
        return "read"
    if name in WRITE_TOOLS:
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        return "write" if isinstance(path, str) and _inside(workspace, path) else "exec"
    return "exec"


def _inside(workspace: Path, path: str) -> bool:
    root = workspace.resolve()
    target = Path(path) if Path(path).is_absolute() else root / path
    try:
        target.resolve().relative_to(root)
    except ValueError:
        return False
    return True


async def decide_permission(
    run: TurnRun,
    name: str,
    tool_input: dict[str, Any],
    tool_use_id: str | None,
    *,
    bridged: Collection[str],
    plan_mode: bool,
) -> Permission:
    """kun's answer to the SDK's question about ``name`` (see the module
    docstring). ``bridged``: kun's tool names this turn bridged. Never
    raises but for cancellation: a failure denies."""
    try:
        return await _decide(run, name, tool_input, tool_use_id, bridged, plan_mode)
    except Exception as exc:
        log.warning("the permission decision for %s failed; denied: %r", name, exc)
        return Permission(False, message=f"kun could not decide whether {name} may run; denied.")


async def _decide(
    run: TurnRun,
    name: str,
    tool_input: dict[str, Any],
    tool_use_id: str | None,
    bridged: Collection[str],
    plan_mode: bool,
) -> Permission:
    if name == ASK_USER_QUESTION:
        return Permission(
            False, message="AskUserQuestion is not available here; use mcp__kun__ tools to ask."
        )
    is_bridged = name.startswith(BRIDGE_PREFIX) and kun_tool_name(name) in bridged
    if plan_mode and not is_bridged:
        return Permission(
            False,
            message=f"Plan mode: {name} is not available, nothing may be changed. Call "
            f"{BRIDGE_PREFIX}create_plan with the whole plan in markdown.",
        )
    kun_name = kun_tool_name(name) if is_bridged else name
    arguments = json.dumps(tool_input, ensure_ascii=False).encode()
    effect = run.tools.effect(kun_name) if is_bridged else None
    if not is_bridged:
        effect = sdk_tool_effect(name, tool_input, run.workspace)
    verdict = decide(run.policy, effect) if effect is not None else "allow"
    if run.link is not None and effect is not None:
        verdict = strictest(verdict, *(decide(c, effect) for c in run.link.ceilings))
    settings = run.state().settings
    if verdict == "ask" and (
        allows(settings.allow_rules, kun_name, arguments)
        or exempt_with_goal(settings.goal, kun_name)
    ):
        verdict = "allow"
    if verdict == "deny":
        return Permission(
            False,
            message=f"The approval policy {run.policy!r} does not allow {kun_name}. Do not "
            "retry it; use another way or tell the user what is needed.",
        )
    if verdict == "ask":
        approved, reason = await _ask(run, kun_name, arguments, tool_use_id)
        if not approved:
            why = f" Their reason: {reason}." if reason else ""
            return Permission(
                False, message=f"The user denied {kun_name}.{why} Do not retry the same call."
            )
    return Permission(True, updated_input=tool_input)


async def _ask(
    run: TurnRun, name: str, arguments: bytes, tool_use_id: str | None
) -> tuple[bool, str | None]:
    approval_id = new_id("apr")
    requested = draft(
        ev.ApprovalRequested,
        run.turn_id,
        approval_id=approval_id,
        call_id=tool_use_id,
        tool_name=name,
        summary=run.tools.redact(summary(name, arguments)),
        diff=UNSET,
    )
    await run.write(requested)
    async with mirrored(run, requested) as answer:
        status, reason = await run.approvals.wait(approval_id, run.thread_id, run.turn_id)
        answer.append(
            draft(ev.ApprovalResolved, approval_id=approval_id, decision=status, reason=reason)
        )
    return status == "approved", reason
