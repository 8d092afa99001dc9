"""``$web_search``: Moonshot's builtin web search, as Kimi's protocol wants it.

Moonshot runs the search itself. The model "calls" ``$web_search`` with
arguments Moonshot made (a search id, the tokens the results will cost);
the client's part is to hand those arguments back, verbatim, as the tool
result, and Moonshot then reads the results into the model's context on the
next request (Moonshot's documentation; Kosong does the same). So this tool
echoes its arguments and does nothing else.

It is offered only when a provider says ``web_search = true``
(:func:`kun.app.session.tool_host`), and only the Kimi dialect sends it
(as a ``builtin_function``, :mod:`kun.model.request.kimi`); other providers
never see it. Effect ``read``: it changes nothing here (Moonshot bills the
search).
"""

from __future__ import annotations

from typing import Any

import msgspec

from kun.contracts.model import ToolSpec
from kun.tools.base import ToolContext, ToolEffect, ToolOutput

NAME = "$web_search"

SPEC = ToolSpec(
    name=NAME,
    description="Search the web (Moonshot's builtin; Moonshot runs it).",
    parameters=msgspec.Raw(b'{"type":"object"}'),
)
"""Open parameters: Moonshot decides the arguments (and never sees this
schema: a builtin function is sent by name only)."""


class WebSearch:
    spec = SPEC
    effect: ToolEffect = "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(output=msgspec.json.encode(args).decode("utf-8"))
