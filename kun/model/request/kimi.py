"""The Kimi (Moonshot) dialect of chat completions: what differs, as Kosong
speaks it.

Moonshot's API is chat completions with a few rules of its own. The
:class:`~kun.model.request.chat_completions.ChatCompletionsCodec` applies
them when its endpoint is a Moonshot host (``api.moonshot.ai``,
``api.moonshot.cn``, the Kimi coding endpoint ``api.kimi.com``;
:func:`~kun.model.endpoints.is_kimi_host`) or the provider says
``dialect = "kimi"`` (a relay in front of Moonshot):

* **Tool schemas** are rewritten into what Moonshot's validator accepts
  (:mod:`.kimi_schema`).
* **Builtin tools.** A tool whose name starts with ``$`` is one of
  Moonshot's builtin functions: it is sent as ``{"type":
  "builtin_function", "function": {"name": "$web_search"}}`` (no
  description, no parameters: Moonshot knows them). Moonshot runs the search
  itself; the model still "calls" ``$web_search`` and the call's arguments
  must come back verbatim as the tool result
  (:class:`kun.tools.builtin.web_search.WebSearch` does that). Other
  dialects have no such tools and never send them (:func:`is_builtin`).
* **Reasoning back.** Every assistant message whose reasoning kun recorded
  carries it as ``reasoning_content`` (Kimi's thinking models lose the
  thread of a tool-using turn without it); a thinking model of the catalogue
  (``reasoning_history == "required"``) gets it on *every* assistant message,
  a single space when none was recorded (Moonshot refuses an assistant
  tool-call message without it while thinking is on).
* **Tool results** carry the tool's ``name`` beside ``tool_call_id``, as in
  Moonshot's own examples (the builtin ``$web_search`` result is matched by
  it).
* **Partial mode.** A request whose last message is an assistant message
  without tool calls is a prefill: Moonshot continues that text instead of
  starting a new reply when the message says ``"partial": true`` (without
  it, Moonshot answers the text as if it were complete). kun sends it on
  exactly that shape: the continuation of an answer cut by ``length``,
  asked for with nothing after it. kun's loop does not ask for such a
  continuation today (a cut answer ends the turn with the warning
  ``output_truncated``, :mod:`kun.domain.recovery`); a caller that sends the
  cut history back as is (no user message, no context instructions after
  it) gets the continuation.

Usage is already read the Moonshot way by :mod:`kun.model.usage` (its
top-level ``cached_tokens``, or ``prompt_tokens_details.cached_tokens``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kun.contracts.model import ToolSpec
from kun.model.request.kimi_schema import kimi_parameters

__all__ = ["BUILTIN_PREFIX", "is_builtin", "kimi_tools"]

BUILTIN_PREFIX = "$"
"""Moonshot's builtin functions are named ``$<name>`` (``$web_search``)."""


def is_builtin(name: str) -> bool:
    """Whether ``name`` is a Moonshot builtin function (only Kimi takes it)."""
    return name.startswith(BUILTIN_PREFIX)


def kimi_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The ``tools`` of a Kimi body: builtin functions by name, every other
    tool as a function with its schema normalized."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        if is_builtin(tool.name):
            out.append({"type": "builtin_function", "function": {"name": tool.name}})
            continue
        out.append(
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": kimi_parameters(tool.parameters),
                },
            }
        )
    return out
