"""What the in-process adapter (:mod:`kun.app.local`) runs turns with: one
TurnService over a home, the router that picks each thread's model, and
what a thread's turns get beyond its logged settings.

A thread's provider, model, approval policy and title live in its log
(``thread_updated``). Its reasoning effort and turn limits are not thread
settings in the contract, so the engine keeps them per thread in memory
(:class:`TurnOptions`) and hands them to each turn it starts: a restart
forgets them, and the defaults (``kun.toml``'s ``[runtime]``) apply again.

:func:`engine_from_config` composes it the way ``kun run`` does
(:mod:`kun.app.session`); tests compose one over a scripted model with
:func:`engine_over`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec

from kun.app.agents import delegation_for
from kun.app.answers import ThreadOptions, TurnLimitsShown
from kun.app.local_errors import InvalidWorkspace
from kun.app.overrides import RuntimeFlags
from kun.app.requests import CreateThread, Limits, UpdateThread
from kun.app.sandboxing import require_sandbox, sandbox_settings
from kun.app.selection import Router, choose_model
from kun.app.session import SYSTEM_PROMPT, open_service
from kun.app.settings import RuntimeSettings, runtime_settings
from kun.config import Config
from kun.contracts.threads import ApprovalPolicy, ThreadSettings
from kun.domain.state import ThreadState
from kun.domain.titles import title_changes
from kun.errors import KunError
from kun.model.port import ModelClient
from kun.model.router import MultiProviderClient
from kun.runtime.context import TurnLimits
from kun.runtime.rearm import open_suspension, rearm
from kun.runtime.recorder import EventRecorder
from kun.runtime.service import TurnService
from kun.store.errors import ThreadLocked
from kun.tools.host import ToolHost
from kun.tools.sandbox import SandboxSettings

__all__ = ["Engine", "TurnOptions", "engine_from_config", "engine_over", "engines_over"]

_log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class TurnOptions:
    """What a thread's turns get that its log does not hold."""

    reasoning_effort: str | None
    limits: TurnLimits

    def answer(self, settings: ThreadSettings, thread_id: str) -> ThreadOptions:
        """What the API answers about a thread created or changed."""
        limits = self.limits
        shown = TurnLimitsShown(
            max_steps=limits.max_steps,
            max_wall_seconds=limits.max_wall_seconds,
            max_cost_usd=limits.cost_budget_usd,
            max_turn_tokens=limits.max_turn_tokens,
        )
        return ThreadOptions(
            thread_id=thread_id,
            settings=settings,
            reasoning_effort=self.reasoning_effort,
            limits=shown,
        )


class Engine:
    def __init__(
        self,
        service: TurnService,
        home: Path,
        *,
        router: Router | None = None,
        approval_policy: ApprovalPolicy = "on-request",
    ) -> None:
        self.service = service
        self.home = home
        self.router = router
        self.approval_policy = approval_policy
        self.defaults = TurnOptions(service.reasoning_effort, service.limits)
        self._options: dict[str, TurnOptions] = {}
        self.config_source: str | None = None
        """The ``kun.toml`` the engine was configured from (``None``: none read)."""
        self.sandbox: SandboxSettings | None = None
        """``[tools.bash]``'s sandbox, to check before a turn runs under a
        policy that wants it (``None``: not checked)."""
        service.queue_models = self._recorded_model

    def _recorded_model(self, provider: str | None, model: str | None) -> ModelClient | None:
        """The client for a queued turn's recorded provider and model, as
        the router has it (``None``: the service's own, when there is no
        router or the provider is no longer configured)."""
        if self.router is None:
            return None
        try:
            return choose_model(self.router, provider=provider, model=model)
        except KunError:
            _log.warning("queued turn on %s/%s: that model is not configured here", provider, model)
            return None

    async def check_sandbox(self, policy: ApprovalPolicy) -> None:
        """:class:`~kun.tools.sandbox.SandboxUnavailable` (one line) before a
        turn whose policy runs commands sandboxed, when ``bwrap`` cannot
        start here."""
        if self.sandbox is not None:
            await anyio.to_thread.run_sync(require_sandbox, self.sandbox, policy)

    # -- threads ---------------------------------------------------------------

    async def state(self, thread_id: str) -> ThreadState:
        """The thread as its log holds it now. A read never takes the
        thread's writer lock (:meth:`EventRecorder.view
        <kun.runtime.recorder.EventRecorder.view>`): a thread the server
        only reads stays free for a terminal's ``kun -c``, and holds no fd.
        Except a thread whose turn waits for an answer that nobody runs (a
        terminal left it waiting after the server started): the server takes
        it up (:meth:`take_waiting`), so its answer can be given here."""
        state = await self.service.recorder.view(thread_id)
        if open_suspension(state) is not None and self.service.running_turn(thread_id) is None:
            await self.take_waiting(thread_id, state.settings)
        return state

    async def take_waiting(self, thread_id: str, settings: ThreadSettings) -> str | None:
        """Re-arm the thread's turn that waits for an answer, on the
        thread's model (:mod:`kun.runtime.rearm`): it runs here, holding
        the thread, until answered and settled. Its id, or ``None`` when
        there is none or another process runs it."""
        try:
            turn_id = await rearm(
                self.service,
                thread_id,
                model=self.model_for(settings),
                limits=self.options(thread_id).limits,
            )
        except ThreadLocked:
            return None
        if turn_id is not None:
            _log.info("turn %s of thread %s waits for an answer again", turn_id, thread_id)
        return turn_id

    def options(self, thread_id: str) -> TurnOptions:
        return self._options.get(thread_id, self.defaults)

    async def create(self, body: CreateThread) -> str:
        workspace = await _folder(Path(body.workspace) if body.workspace else Path.cwd())
        provider, model = self._target(body.provider, body.model, None)
        settings = ThreadSettings(
            workspace=str(workspace),
            provider=provider,
            model=model,
            approval_policy=body.approval_policy or self.approval_policy,
        )
        if body.title:
            changes = title_changes(settings, body.title, "user")
            settings = msgspec.structs.replace(settings, **changes)
        thread_id = await self.service.create_thread(settings)
        self._set_options(thread_id, body.reasoning_effort, body.limits)
        return thread_id

    async def update(self, thread_id: str, body: UpdateThread) -> ThreadState:
        state = await self.state(thread_id)
        thread_id = state.thread_id
        changes: dict[str, Any] = {}
        if body.provider is not None or body.model is not None:
            provider, model = self._target(body.provider, body.model, state.settings)
            if (provider, model) != (state.settings.provider, state.settings.model):
                changes.update(provider=provider, model=model)
        if body.approval_policy is not None and body.approval_policy != (
            state.settings.approval_policy
        ):
            changes["approval_policy"] = body.approval_policy
        if body.workspace is not None:
            workspace = str(await _folder(Path(body.workspace)))
            if workspace != state.settings.workspace:
                changes["workspace"] = workspace
        if changes:
            await self.service.update_thread(thread_id, **changes)
        if body.title is not None:
            await self.service.retitle(thread_id, body.title, "user")
        self._set_options(thread_id, body.reasoning_effort, body.limits)
        return self.service.state(thread_id)

    def _set_options(self, thread_id: str, effort: str | None, limits: Limits | None) -> None:
        if effort is None and limits is None:
            return
        old = self.options(thread_id)
        limit = old.limits
        if limits is not None:
            limit = TurnLimits(
                max_steps=limits.max_steps if limits.max_steps is not None else limit.max_steps,
                max_wall_seconds=limits.max_wall_seconds or limit.max_wall_seconds,
                max_tool_calls_per_step=limit.max_tool_calls_per_step,
                cost_budget_usd=(
                    limits.max_cost_usd
                    if limits.max_cost_usd is not None
                    else limit.cost_budget_usd
                ),
                max_turn_tokens=(
                    limits.max_turn_tokens
                    if limits.max_turn_tokens is not None
                    else limit.max_turn_tokens
                ),
            )
        self._options[thread_id] = TurnOptions(
            effort if effort is not None else old.reasoning_effort, limit
        )

    def _target(
        self, provider: str | None, model: str | None, settings: ThreadSettings | None
    ) -> tuple[str | None, str | None]:
        """The provider and model a thread names: through the router (an
        unknown provider is the router's one-line error), else as given."""
        if self.router is None:
            default = self.service.model
            return provider or default.provider, model or default.model
        client = choose_model(self.router, provider=provider, model=model, settings=settings)
        return client.provider, client.model

    def model_for(self, settings: ThreadSettings) -> ModelClient | None:
        """The client the thread's next turn runs on (``None``: the
        service's own, when there is no router)."""
        if self.router is None:
            return None
        return choose_model(self.router, settings=settings)


async def _folder(path: Path) -> Path:
    """``path`` resolved, when it is a folder on this machine (a ``workspace``)."""
    try:
        folder = await anyio.Path(path).is_dir()
        if folder:
            return Path(await anyio.Path(path).resolve())
    except OSError as exc:  # a name too long for the filesystem, a loop
        raise InvalidWorkspace(f"{path}: {exc.strerror}") from None
    raise InvalidWorkspace(f"{path} is not a folder here")


@asynccontextmanager
async def engine_over(
    home: Path,
    model: ModelClient,
    *,
    tools: ToolHost | None = None,
    runtime: RuntimeSettings | None = None,
    router: Router | None = None,
    config: Config | None = None,
    recorder: EventRecorder | None = None,
) -> AsyncIterator[Engine]:
    """An engine over ``home`` whose turns run on ``model`` (or, with a
    ``router``, on each thread's own); ``recorder``: one already open over
    ``home``, shared with the adapter's reads and followers."""
    limits = runtime.limits if runtime is not None else None
    async with open_service(
        home,
        model,
        tools=tools,
        config=config,
        limits=limits,
        system_prompt=runtime.system_prompt if runtime is not None else SYSTEM_PROMPT,
        reasoning_effort=runtime.reasoning_effort if runtime is not None else None,
        repetition=runtime.repetition if runtime is not None else None,
        approval=runtime.approval_policy if runtime is not None else None,
        recorder=recorder,
    ) as service:
        service.delegation = delegation_for(service, config, router)
        yield Engine(
            service,
            home,
            router=router,
            approval_policy=runtime.approval_policy if runtime is not None else "on-request",
        )


@asynccontextmanager
async def engine_from_config(
    home: Path,
    config: Config,
    flags: RuntimeFlags | None = None,
    *,
    router: MultiProviderClient | None = None,
    recorder: EventRecorder | None = None,
    store: str | None = None,
) -> AsyncIterator[Engine]:
    """The engine ``kun run`` and ``kun serve`` run: the configured
    providers, the runtime settings (flags over ``[runtime]``), the tools
    with the providers' secrets kept from them. ``router``: one already
    built from ``config``. ``store``: without a ``recorder``, the database
    its threads are in (``None``: the home's files, :mod:`kun.app.stores`).
    Where the approval policy of new threads runs
    commands sandboxed, a ``bwrap`` that cannot start is one line before
    anything opens (:func:`~kun.app.sandboxing.require_sandbox`)."""
    from kun.model.factory import build_router

    runtime = runtime_settings(config, flags)
    sandbox = sandbox_settings(config, home)
    await anyio.to_thread.run_sync(require_sandbox, sandbox, runtime.approval_policy)
    async with AsyncExitStack() as stack:
        if recorder is None and store is not None:
            from kun.app.stores import open_store

            opened = await stack.enter_async_context(open_store(home, store))
            recorder = await stack.enter_async_context(EventRecorder(opened))
        router = await stack.enter_async_context(router or build_router(config))
        model = choose_model(router)
        engine = await stack.enter_async_context(
            engine_over(
                home, model, runtime=runtime, router=router, config=config, recorder=recorder
            )
        )
        engine.config_source = config.source
        engine.sandbox = sandbox
        yield engine


def engines_over(
    home: Path, model: ModelClient
) -> Callable[[EventRecorder, Path | None], AbstractAsyncContextManager[Engine]]:
    """The opener :func:`kun.app.local.open_home` takes, for engines whose
    turns all run on ``model`` whatever the workspace (``kun demo``'s)."""

    def opened(
        recorder: EventRecorder, _workspace: Path | None
    ) -> AbstractAsyncContextManager[Engine]:
        return engine_over(home, model, recorder=recorder)

    return opened
