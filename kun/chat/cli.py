"""The session's click commands: ``kun chat``, ``kun resume``, and plain
``kun`` (``-c`` / ``--continue``), registered by :mod:`kun.cli`.

Only click is imported here; the session's modules load when one starts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec

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
    """Open a session (see :mod:`kun.chat.start`) on the home, or with
    ``--server URL`` on that ``kun serve``; on leaving, say how to come
    back. ``workspace``: given, the folder of a new thread and of the one
    resumed (rebound to it), and where ``-c`` looks. The runtime flags
    become the thread's reasoning effort and limits."""
    from kun.app.connect import LocalTarget, RemoteTarget
    from kun.app.live import resolve_home
    from kun.chat.session import SessionSetup
    from kun.chat.start import needs_terminal, open_chat
    from kun.cli.remote import local_only
    from kun.cli.run import thread_changes
    from kun.cli.target import command_target, run_explained

    flags = runtime_flags(approval)
    target = command_target(home, config=config, flags=flags)
    where = target.url if isinstance(target, RemoteTarget) else None
    if where is not None:
        local_only(system=flags.system_prompt)
    needs_terminal()
    changes = thread_changes(flags, provider=provider, model=model)
    folder = (workspace or Path.cwd()).resolve()
    if workspace is not None and (resume_id is not None or pick or continue_latest):
        changes = msgspec.structs.replace(changes, workspace=str(folder))
    setup = SessionSetup(str(folder), None, changes, where)

    async def go() -> str | None:
        return await open_chat(
            target,
            setup,
            target.home if isinstance(target, LocalTarget) else resolve_home(None),
            continue_latest=continue_latest,
            resume=resume_id,
            pick=pick,
        )

    thread_id = run_explained(target, go)
    if thread_id is not None:
        again = pasteable("resume", thread_id[:12])
        click.echo(f"thread {thread_id} · back to it: {pasteable('-c')}, or {again}")


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
