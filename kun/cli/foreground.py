"""The runtime a foreground command works with (``kun run``, the
interactive session): the configuration and its runtime settings, the
provider router, the model the user chose, and the service over the home,
with a thread the user continues opened on its own model unless they named
another (:func:`kun.app.selection.continue_thread`).

One place so ``kun run`` and the session cannot drift apart in how a
model is chosen or what the service is given.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio
import click

from kun.app.sandboxing import require_sandbox, sandbox_settings
from kun.app.selection import SwitchableModel, choose_model, continue_thread
from kun.app.session import open_service
from kun.app.settings import RuntimeSettings, runtime_settings
from kun.cli.flags import RuntimeFlags
from kun.config import Config, load_config
from kun.contracts.threads import ApprovalPolicy
from kun.model.factory import build_router
from kun.model.router import MultiProviderClient
from kun.runtime.service import TurnService

__all__ = ["Foreground", "ForegroundOptions", "open_foreground"]


@dataclass(frozen=True)
class Foreground:
    config: Config
    runtime: RuntimeSettings
    router: MultiProviderClient
    model: SwitchableModel
    service: TurnService


class ForegroundOptions(Protocol):
    """What ``kun run`` and the session were asked for (their options)."""

    @property
    def home(self) -> Path: ...
    @property
    def config(self) -> Path | None: ...
    @property
    def runtime(self) -> RuntimeFlags: ...
    @property
    def provider(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def approval(self) -> ApprovalPolicy | None: ...
    @property
    def workspace(self) -> Path: ...


def thread_config(options: ForegroundOptions, thread_id: str | None) -> Config:
    """The configuration of the thread's workspace: the one ``thread_id``
    was created in, else (a new thread) ``--workspace``. Its ``kun.toml``
    comes before the one here (:func:`kun.config.find_config`), so a
    thread continued from another folder runs as it did at home; a note on
    stderr names that file when it is not the one here."""
    workspace = options.workspace.resolve()
    if thread_id is not None:
        workspace = _workspace_of(options.home, thread_id) or workspace
    config = load_config(options.config, home=options.home, workspace=workspace)
    if Path(config.source).parent == workspace and workspace != Path.cwd().resolve():
        click.echo(
            f"kun: note: configuration from {config.source} (the thread's workspace)", err=True
        )
    return config


def _workspace_of(home: Path, thread_id: str) -> Path | None:
    from kun.app.listing import summarize

    workspace = summarize(home, thread_id).workspace
    return Path(workspace) if workspace else None


@asynccontextmanager
async def open_foreground(
    options: ForegroundOptions, thread_id: str | None
) -> AsyncIterator[Foreground]:
    """Everything open until the block ends; ``thread_id`` (when given) is
    opened to continue with the model and approval policy asked for. Where
    the approval policy of new threads, or of the thread continued, runs
    commands sandboxed, a ``bwrap`` that cannot start is one line before
    any turn runs (:func:`~kun.app.sandboxing.require_sandbox`)."""
    home, provider, model = options.home, options.provider, options.model
    config = thread_config(options, thread_id)
    runtime = runtime_settings(config, options.runtime)
    approval = options.approval or runtime.approval_policy
    await anyio.to_thread.run_sync(require_sandbox, sandbox_settings(config, home), approval)
    router = build_router(config)
    chosen = SwitchableModel(choose_model(router, provider=provider, model=model))
    async with (
        router,
        open_service(
            home,
            chosen,
            config=config,
            limits=runtime.limits,
            system_prompt=runtime.system_prompt,
            reasoning_effort=runtime.reasoning_effort,
            repetition=runtime.repetition,
            approval=approval,
        ) as service,
    ):
        if thread_id is not None:
            await continue_thread(
                service,
                router,
                chosen,
                thread_id,
                provider=provider,
                model_name=model,
                approval=options.approval,
            )
            policy = service.state(thread_id).settings.approval_policy
            await anyio.to_thread.run_sync(require_sandbox, sandbox_settings(config, home), policy)
        yield Foreground(config, runtime, router, chosen, service)
