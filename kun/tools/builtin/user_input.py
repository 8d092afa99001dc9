"""``request_user_input``: ask the user a question and wait for the answer.

Effect ``interact``: it changes nothing, so no policy asks approval for it
(that would be a question about asking a question). It exists only in
attended turns: with ``ctx.ask_user`` set to ``None`` the host does not
advertise it, and a call that arrives anyway is ``user_input_unavailable``
with an instruction to carry on without the user. An unanswered question
(dismissed, cancelled by an abort or the end of the turn) is not an error:
the model is told no answer came and to continue on its own judgement.
"""

from __future__ import annotations

from typing import Any

from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.errors import ToolError

NAME = "request_user_input"

SPEC = make_spec(
    NAME,
    "Ask the user a question and wait for the answer. Use it only when you cannot proceed "
    "without a decision or fact that only the user has; do not ask for confirmation of "
    "routine steps. Give options when the answer is one of a few choices.",
    {
        "question": {"type": "string", "minLength": 1, "description": "The question."},
        "options": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "maxItems": 10,
            "description": "Suggested answers the user can pick from (optional).",
        },
    },
    required=["question"],
)


class RequestUserInput:
    spec = SPEC
    effect: ToolEffect = "interact"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if ctx.ask_user is None:
            raise ToolError(
                "user_input_unavailable",
                "No user is available in this turn. Do not wait for one: make a reasonable "
                "assumption, say which, and continue.",
            )
        options = tuple(str(o) for o in args.get("options", ()))
        return answer_output(await ctx.ask_user(args["question"], options))


def answer_output(answer: str | None) -> ToolOutput:
    """The call's result for ``answer`` (``None``: no answer came)."""
    if answer is None:
        return ToolOutput(
            output="The user gave no answer. Continue with your best judgement and say "
            "what you assumed."
        )
    return ToolOutput(output=f"The user answered: {answer}")
