"""The SDK's options for one delegated turn, as plain keyword arguments of
``ClaudeAgentOptions`` (so they can be built and checked without the SDK).

kun's policy, translated:

* the model: a Claude id (:func:`kun.model.delegated.claude_model`);
* the system prompt: Claude Code's own preset, with kun's project context
  (the workspace's instructions file and environment, as recorded in
  ``turn_started``) appended, since no host settings are loaded to bring
  ``CLAUDE.md``;
* ``setting_sources=[]``: nothing of the host's ``~/.claude`` or the
  project's ``.claude/`` settings (a cloned repository's settings could run
  hooks, and the user's could change tools or credentials behind kun);
* the environment: scrubbed of the variables that would override the
  subscription (:mod:`kun.runtime.agent_sdk.env`);
* tools: kun's bridged MCP server ``kun``; ``AskUserQuestion`` disallowed
  (no UI for it); every permission through ``can_use_tool``
  (:mod:`kun.runtime.agent_sdk.permissions`), with the ``default``
  permission mode. In a plan-mode turn no built-in tool at all
  (``tools=[]``): kun's plan mode is kun's, not the SDK's ``plan`` mode,
  which would also switch off the bridged ``create_plan``;
* limits: the turn's ``max_steps`` as ``max_turns``, its cost budget as
  ``max_budget_usd``;
* ``resume``: the session to continue when the turn resumes;
* reasoning: the turn's effort as the SDK's ``effort`` when it is one of
  its levels (:data:`SDK_EFFORTS`), ``off`` as thinking disabled, anything
  else (``on``) the SDK's default;
* ``include_partial_messages``: text and thinking stream as deltas.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kun.model.delegated import AgentSdkSettings
from kun.runtime.agent_sdk.env import sdk_env
from kun.runtime.agent_sdk.permissions import ASK_USER_QUESTION
from kun.runtime.context import TurnLimits

__all__ = ["SDK_EFFORTS", "sdk_options"]

SDK_EFFORTS = frozenset({"low", "medium", "high", "xhigh", "max"})


def sdk_options(
    settings: AgentSdkSettings,
    *,
    workspace: Path,
    environ: Mapping[str, str],
    limits: TurnLimits,
    plan_mode: bool,
    resume: str | None,
    system_append: str | None,
    mcp_servers: dict[str, Any],
    can_use_tool: Any,
) -> dict[str, Any]:
    """The keyword arguments of ``ClaudeAgentOptions`` for a turn (see the
    module docstring)."""
    system_prompt: dict[str, str] = {"type": "preset", "preset": "claude_code"}
    if system_append:
        system_prompt["append"] = system_append
    options: dict[str, Any] = {
        "model": settings.model,
        "cwd": str(workspace),
        "system_prompt": system_prompt,
        "setting_sources": [],
        "env": sdk_env(environ, token_env=settings.token_env),
        "mcp_servers": mcp_servers,
        "disallowed_tools": [ASK_USER_QUESTION],
        "permission_mode": "default",
        "can_use_tool": can_use_tool,
        "include_partial_messages": True,
    }
    if settings.cli_path is not None:
        options["cli_path"] = settings.cli_path
    if plan_mode:
        options["tools"] = []
    if resume is not None:
        options["resume"] = resume
    if limits.max_steps is not None:
        options["max_turns"] = limits.max_steps
    if limits.cost_budget_usd is not None:
        options["max_budget_usd"] = limits.cost_budget_usd
    if settings.effort in SDK_EFFORTS:
        options["effort"] = settings.effort
    elif settings.effort == "off":
        options["thinking"] = {"type": "disabled"}
    return options
