"""``create_plan``: record the plan of a plan-mode turn (SPEC §7.5).

The plan is one markdown document: ``##`` sections and the steps as a
checklist. Recording it (``ctx.record_plan``) appends a ``plan`` item to the
turn and replaces the thread's todos with the checklist (``- [ ]`` pending,
``- [x]`` completed), so the work that follows starts from the plan's steps.
Effect ``state``: it changes the thread's own state, never the workspace,
which is why plan mode allows it while it withholds every change tool.
"""

from __future__ import annotations

from typing import Any

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.errors import ToolError

NAME = "create_plan"
MAX_PLAN_CHARS = 100_000

SPEC = make_spec(
    NAME,
    "Record your plan. Call it once, when the investigation is done, with the whole plan "
    "in markdown: ## sections (goal, findings, steps, risks) and the steps as a checklist "
    "(- [ ] step). The checklist becomes the thread's todo list. Do not change files.",
    {
        "summary": {
            "type": "string",
            "minLength": 1,
            "description": "One line: what the plan achieves.",
        },
        "markdown": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_PLAN_CHARS,
            "description": "The whole plan in markdown.",
        },
    },
    required=["summary", "markdown"],
)


class CreatePlan:
    spec = SPEC
    effect: ToolEffect = "state"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if ctx.record_plan is None:
            raise ToolError("plan_unavailable", "This turn cannot record a plan.")
        markdown = str(args["markdown"])
        if not markdown.strip():
            raise ToolError("invalid_arguments", "The plan is empty: send the whole plan.")
        todos = await ctx.record_plan(str(args["summary"]).strip(), markdown)
        return ToolOutput(output=f"Plan recorded. {todos}")
