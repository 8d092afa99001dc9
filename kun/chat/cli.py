"""The session's click commands: ``kun chat``, ``kun resume``, and plain
``kun`` (``-c`` / ``--continue``), registered by :mod:`kun.cli`.

Only click is imported here; the session's modules load when one starts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kun.cli.colors import no_color_option
from kun.cli.flags import runtime_flags, runtime_options
from kun.cli.options import home_option, pasteable

__all__ = ["POLICIES", "chat", "resume", "session_options", "start_session"]

F = TypeVar("F", bound=Callable[..., Any])

POLICIES = ["never", "on-request", "untrusted", "always", "auto", "full-auto"]


def session_options(func: F) -> F:
    """The options of a session (on ``kun`` itself, ``kun chat`` and
    ``kun resume``)."""
    options = [
        click.option("--provider", default=None, help="Provider from kun.toml or the environment."),
        click.option("--model", default=None, help="Model (of --provider, else the thread's)."),
        click.option(
            "--approval", type=click.Choice(POLICIES), default=None, help="Approval policy."
        ),
        click.option(
            "--config",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="kun.toml to use (default: $KUN_CONFIG, ./kun.toml, $KUN_HOME/kun.toml).",
        ),
        click.option(
            "--workspace",
            type=click.Path(file_okay=False, exists=True, path_type=Path),
            default=None,
            help="Folder the tools work in (default: here); a resumed thread's from now on.",
        ),
        home_option,
    ]
    func = runtime_options(func)
    for option in reversed(options):
        func = option(func)
    return no_color_option(func)


def start_session(
    *,
    resume_id: str | None = None,
    pick: bool = False,
    continue_latest: bool = False,
    provider: str | None = None,
    model: str | None = None,
    approval: Any = None,
    config: Path | None = None,
    home: Path | None = None,
    workspace: Path | None = None,
) -> None:
    """Open a session (see :mod:`kun.chat.start`), or with ``--server URL``
    one on that ``kun serve`` (:mod:`kun.chat.remote`); on leaving, say how
    to come back. ``workspace``: given, the folder of a new thread and of the
    one resumed (rebound to it), and where ``-c`` looks."""
    import anyio

    from kun.cli.remote import remote_target

    remote = remote_target()
    if remote is not None:
        _remote_session(
            remote,
            resume_id=resume_id,
            pick=pick,
            continue_latest=continue_latest,
            provider=provider,
            model=model,
            approval=approval,
            config=config,
            home=home,
            workspace=workspace,
        )
        return

    from kun.chat.start import (
        ChatOptions,
        choose_thread,
        continue_thread,
        needs_terminal,
        open_chat,
    )
    from kun.store.paths import resolve_home

    needs_terminal()
    root = resolve_home(home)
    rebind = workspace
    workspace = workspace or Path.cwd()
    options = ChatOptions(
        root, config, provider, model, approval, workspace, runtime_flags(approval), rebind
    )

    async def go() -> str | None:
        thread_id: str | None = None
        if continue_latest:
            thread_id = continue_thread(root, workspace)
        elif resume_id is not None or pick:
            thread_id = await choose_thread(root, workspace, resume_id)
        return await open_chat(options, thread_id)

    thread_id = anyio.run(go)
    if thread_id is not None:
        again = pasteable("resume", thread_id[:12])
        click.echo(f"thread {thread_id} · back to it: {pasteable('-c')}, or {again}")


def _remote_session(
    remote: Any,
    *,
    resume_id: str | None,
    pick: bool,
    continue_latest: bool,
    provider: str | None,
    model: str | None,
    approval: Any,
    config: Path | None,
    home: Path | None,
    workspace: Path | None,
) -> None:
    """``kun --server URL [-c | resume T]``: the session on that server's
    threads (``workspace``: where ``-c`` looks and a new thread works). The
    thread's settings (provider, model, approval) go to the server with the
    runtime flags (its reasoning effort and limits, as
    ``kun --server URL run`` sends them); a config file is the server's."""
    import anyio

    from kun.chat.remote import RemoteSetup, open_remote_chat
    from kun.chat.start import needs_terminal
    from kun.cli.remote import local_only
    from kun.cli.remote_run import thread_settings
    from kun.store.paths import resolve_home

    flags = runtime_flags(approval)
    local_only(config=config, system=flags.system_prompt)
    if pick:
        raise click.UsageError(
            f"with --server, name the thread: kun --server {remote.url} resume THREAD "
            f"(kun --server {remote.url} threads lists them), or -c for this workspace's latest"
        )
    needs_terminal()
    settings = thread_settings(flags, provider=provider, model=model)
    setup = RemoteSetup((workspace or Path.cwd()).resolve(), None, settings)

    async def go() -> str | None:
        return await open_remote_chat(
            remote, resolve_home(home), setup, continue_latest=continue_latest, resume=resume_id
        )

    thread_id = anyio.run(go)
    if thread_id is not None:
        click.echo(f"thread {thread_id} · back to it: kun --server {remote.url} resume {thread_id}")


@click.command()
@session_options
def chat(**options: Any) -> None:
    """An interactive session on a new thread (plain `kun` does the same)."""
    start_session(**options)


@click.command()
@click.argument("thread", required=False)
@session_options
def resume(thread: str | None, **options: Any) -> None:
    """Resume THREAD in an interactive session (an id prefix will do); without
    THREAD, pick one of this workspace's recent threads."""
    start_session(resume_id=thread, pick=thread is None, **options)
