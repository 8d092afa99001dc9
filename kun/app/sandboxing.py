"""The sandbox settings of a process, from ``[tools.bash]`` of its
configuration and its home (:mod:`kun.tools.sandbox` builds and runs it).

``kun serve`` turns ``auto`` into ``on`` (:func:`serving`): over HTTP a
token is all it takes to reach ``bash``. Where the sandbox will be needed,
a command checks that ``bwrap`` can start before anything else
(:func:`require_sandbox`): one line saying how to install it or opt out,
instead of a first ``bash`` call refused in the middle of a turn.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import msgspec

from kun.config import ENVIRONMENT, Config
from kun.config.schema import McpServerTable
from kun.contracts.threads import ApprovalPolicy
from kun.tools.sandbox import SandboxPolicy, SandboxSettings, probe

__all__ = ["require_sandbox", "sandbox_settings", "server_sandboxes", "serving"]


def sandbox_settings(config: Config | None, home: Path | None) -> SandboxSettings:
    """``[tools.bash] sandbox``, ``writable`` and ``network`` of ``config``;
    hidden: kun's ``home`` and the configuration file in use."""
    hidden = [] if home is None else [home]
    if config is None:
        return SandboxSettings(hidden=tuple(hidden))
    if config.source != ENVIRONMENT:
        hidden.append(Path(config.source))
    bash = config.tools.bash
    return SandboxSettings(
        mode=bash.sandbox,
        writable=tuple(Path(path) for path in bash.writable),
        network=bash.network,
        hidden=tuple(hidden),
    )


def serving(config: Config) -> Config:
    """``config`` as ``kun serve`` runs it: ``sandbox = "auto"`` is ``on``."""
    bash = config.tools.bash
    if bash.sandbox != "auto":
        return config
    tools = msgspec.structs.replace(config.tools, bash=msgspec.structs.replace(bash, sandbox="on"))
    return msgspec.structs.replace(config, tools=tools)


def require_sandbox(settings: SandboxSettings, policy: ApprovalPolicy | None) -> None:
    """Raise :class:`~kun.tools.sandbox.SandboxUnavailable` (one line) when
    commands run under ``policy`` are to be sandboxed and ``bwrap`` cannot
    start here. Blocking (it may run ``bwrap`` once; the answer is kept)."""
    if settings.wanted(policy):
        probe()


def server_sandboxes(
    settings: SandboxSettings,
    servers: Mapping[str, McpServerTable],
    workspace: Path,
    policy: ApprovalPolicy | None,
) -> dict[str, SandboxPolicy]:
    """The sandbox of each stdio server of ``servers`` that runs in one:
    ``[mcp.NAME] sandbox`` and ``network`` where set, else as ``bash`` does
    under ``policy`` (``settings``), with ``workspace`` writable. A server
    absent from the answer runs unsandboxed."""
    sandboxes = {}
    for name, table in servers.items():
        if table.command is None:
            continue
        if table.sandbox == "inherit" and not settings.wanted(policy):
            continue
        if table.sandbox == "off":
            continue
        network = settings.network if table.network is None else table.network
        own = dataclasses.replace(settings, mode="on", network=network)
        sandbox = own.policy_for(workspace, policy)
        if sandbox is not None:
            sandboxes[name] = sandbox
    return sandboxes
