"""``delegate_task``: hand a focused task to a sub-agent and get back only
its answer (SPEC §6.3; :mod:`kun.runtime.delegation` runs it).

The sub-agent works on a hidden side thread of its own, with a fresh
context: the task must say everything it needs. Several calls in one step
run at once. Effect ``delegate``: the call itself is never put to the
approval policy; each call the sub-agent makes is, under its own policy and
the parent's.
"""

from __future__ import annotations

from typing import Any

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.errors import ToolError

NAME = "delegate_task"
NOT_AVAILABLE = "delegation_unavailable"

SPEC = make_spec(
    NAME,
    "Hand one focused task to a sub-agent with a fresh context, and get back only its final "
    "answer. Use it for self-contained research or work whose details you do not need to "
    "see (searching a large codebase, reading many files, checking one thing in depth). The "
    "sub-agent sees nothing of this conversation: say in `task` everything it needs (paths, "
    "names, what to return). Call it several times in one step to run tasks in parallel. "
    "`agent` names a configured agent profile; leave it out for a read-only helper.",
    {
        "task": {
            "type": "string",
            "minLength": 1,
            "description": "The whole task, self-contained, and what the answer should hold.",
        },
        "agent": {
            "type": "string",
            "minLength": 1,
            "description": "The agent profile to run (from the configuration); optional.",
        },
    },
    required=("task",),
)


class DelegateTask:
    spec = SPEC
    effect: ToolEffect = "delegate"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if ctx.delegate is None:
            raise ToolError(
                NOT_AVAILABLE,
                "Delegation is not available here (this runtime has none, or this sub-agent "
                "may not delegate further). Do the task yourself.",
            )
        agent = args.get("agent")
        return await ctx.delegate(str(args["task"]), None if agent is None else str(agent))
