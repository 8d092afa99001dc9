"""A TurnService over the JSONL store, for commands that run turns, and the
tools those turns use."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from kun.app.sandboxing import sandbox_settings, server_sandboxes
from kun.app.windows import compact_at, context_windows
from kun.config import Config
from kun.contracts.threads import ApprovalPolicy
from kun.domain.compaction import DEFAULT_COMPACT_AT
from kun.domain.repetition import RepetitionSettings
from kun.domain.resume_policy import ResumeSettings
from kun.mcp import open_mcp_tools, secret_values
from kun.model.port import ModelClient
from kun.model.redact import Redactor
from kun.observe.setup import observing
from kun.runtime.context import TurnLimits
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.runtime.titler import Titler
from kun.store.jsonl import JsonlEventStore
from kun.tools.base import Tool
from kun.tools.builtin import WebSearch, builtin_tools
from kun.tools.environment import ToolEnvironment
from kun.tools.host import ToolHost

SYSTEM_PROMPT = (
    "You are kun, a coding agent working in the user's workspace. Use the tools to "
    "read, search and change files and to run commands; check before you change. "
    "Keep answers short and concrete, and say what you changed."
)


def tool_host(
    config: Config | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    extra: Iterable[Tool] = (),
    refresh_extra: Callable[[], Awaitable[Iterable[Tool] | None]] | None = None,
    home: Path | None = None,
) -> ToolHost:
    """The built-in tools with kun's secrets kept from them: ``bash`` runs
    commands without the providers' key variables and the secret-looking
    ones, but those ``[tools.bash] env_allow`` names
    (:mod:`kun.tools.environment`); every result is scrubbed of the values
    of all of them, in every form (:class:`~kun.model.redact.Redactor`),
    before it is recorded. The values are read from ``environ`` (default:
    ``os.environ``) once, here; a command gets kun's environment as it is
    when the command starts, less what is withheld. ``extra`` are the
    tools of the configured MCP servers (:mod:`kun.mcp`); the values of the
    variables their ``env`` and ``headers_env`` name are scrubbed too;
    ``refresh_extra`` returns them anew when a server changed its list.
    ``bash`` runs sandboxed as ``[tools.bash]`` says, kun's ``home`` hidden
    (:mod:`kun.app.sandboxing`). Moonshot's ``$web_search`` is added when
    a provider says ``web_search = true`` (only Kimi's dialect sends it,
    :mod:`kun.tools.builtin.web_search`)."""
    env = os.environ if environ is None else environ
    providers = config.providers.values() if config is not None else ()
    environment = ToolEnvironment(
        withhold=frozenset(p.api_key_env for p in providers if p.api_key_env),
        allow=frozenset(config.tools.bash.env_allow if config is not None else ()),
    )
    secrets = {*environment.secret_values(env)}
    secrets |= secret_values(config.mcp, env) if config is not None else set()
    redactor = Redactor(sorted(secrets))
    builtins = builtin_tools(environment, sandbox_settings(config, home))
    if any(provider.web_search for provider in providers):
        builtins = (*builtins, WebSearch())

    async def refresh() -> list[Tool] | None:
        changed = await refresh_extra() if refresh_extra is not None else None
        return None if changed is None else [*builtins, *changed]

    tools = [*builtins, *extra]
    return ToolHost(
        tools,
        redact=redactor.scrub if redactor else None,
        refresh=refresh if refresh_extra is not None else None,
    )


def resume_settings(config: Config | None) -> ResumeSettings:
    """``[runtime] goal_resume_*`` (no flag sets them), else the SPEC's
    defaults; read here rather than handed over by each command, so every
    surface that runs turns (``kun run``, the session, the server) gets them."""
    written, default = (config.runtime if config is not None else None), ResumeSettings()
    if written is None:
        return default
    return ResumeSettings(
        base_seconds=written.goal_resume_base_seconds or default.base_seconds,
        cap_seconds=written.goal_resume_max_seconds or default.cap_seconds,
        max_attempts=written.goal_resume_max_attempts or default.max_attempts,
    )


@asynccontextmanager
async def open_service(
    home: Path,
    model: ModelClient | None = None,
    *,
    tools: ToolHost | None = None,
    config: Config | None = None,
    limits: TurnLimits | None = None,
    system_prompt: str = SYSTEM_PROMPT,
    reasoning_effort: str | None = None,
    repetition: RepetitionSettings | None = None,
    resume: ResumeSettings | None = None,
    approval: ApprovalPolicy | None = None,
    recorder: EventRecorder | None = None,
) -> AsyncIterator[TurnService]:
    """The service, its recorder and store, and the task group its turns
    run in; everything is flushed and closed on exit. Without ``tools``, a
    service with a model gets :func:`tool_host` of ``config``, so every
    surface that runs turns keeps the configured secrets from its tools.
    Its turns send the workspace's project context
    (:mod:`kun.runtime.project`), and compact their history by the model's
    context window and ``[runtime] compact_at`` of ``config``
    (:mod:`kun.app.windows`); ``repetition`` (``[runtime] repetition_*``)
    tunes their round-outcome decisions (:mod:`kun.domain.recovery`);
    ``resume``, else ``[runtime] goal_resume_*`` of ``config``
    (:func:`resume_settings`), is the backoff of their goal resume.
    With the default tools, the MCP servers of ``config`` are connected
    for as long as the service is open (:mod:`kun.mcp`), the stdio ones
    sandboxed as their ``[mcp.NAME] sandbox`` says, by default when
    ``[tools.bash] sandbox`` is ``on``, or ``auto`` and ``approval`` (the
    policy of the process's new threads) runs commands without asking, with
    kun's working directory writable
    (:func:`~kun.app.sandboxing.server_sandboxes`). Its turns are
    logged and traced as ``[observability]``, the environment and the
    command's flags ask (:mod:`kun.observe`; nothing is wrapped when off).
    ``recorder``: one already open over the home (its owner closes it), so
    what this service writes reaches that recorder's followers."""
    servers = config.mcp if config is not None and tools is None and model is not None else {}
    sandbox = sandbox_settings(config, home)
    mcp_sandboxes = server_sandboxes(sandbox, servers, Path.cwd(), approval)
    async with (
        _recording(home, recorder) as recorder,
        open_mcp_tools(
            servers, os.environ, home / "uploads", cache_home=home, sandboxes=mcp_sandboxes
        ) as mcp,
        observing(
            home,
            config,
            tools
            or (
                tool_host(config, extra=mcp.tools, refresh_extra=mcp.refresh, home=home)
                if model is not None
                else None
            ),
        ) as watched,
        anyio.create_task_group() as tg,
    ):
        service = TurnService(
            recorder,
            tg,
            model=model,
            tools=watched.tools,
            hooks=watched.hooks,
            limits=limits,
            system_prompt=system_prompt,
            reasoning_effort=reasoning_effort,
            project_context=True,
            context_windows=context_windows(config) if config is not None else None,
            compact_at=compact_at(config) if config is not None else DEFAULT_COMPACT_AT,
            repetition=repetition,
            resume=resume if resume is not None else resume_settings(config),
            titler=Titler() if config is not None and config.runtime.model_titles else None,
        )
        try:
            yield service
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def _recording(home: Path, recorder: EventRecorder | None) -> AsyncIterator[EventRecorder]:
    """``recorder``, or a new one over a new store of ``home``, open until the block ends."""
    if recorder is not None:
        yield recorder
        return
    async with JsonlEventStore(home) as store, EventRecorder(store) as opened:
        yield opened
