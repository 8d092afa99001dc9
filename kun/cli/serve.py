"""``kun serve``: the HTTP API (:mod:`kun.server`) under uvicorn.

The token is read from an environment variable named by ``--token-env``,
never from the command line (where ``ps`` shows it to every user), and
removed from kun's environment once read, erased from the process's initial
environment block too (``/proc/<pid>/environ``): the commands the model
runs inherit that environment, and whatever they print is recorded and sent
to the provider, whatever the variable is called. Commands run sandboxed
unless ``[tools.bash] sandbox = "off"`` (:mod:`kun.app.sandboxing`): no
``/proc`` of kun's, no route to its port. A bind
to anything but loopback without a token is refused before anything
starts: one line, exit status 2.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kun.cli.flags import runtime_flags, runtime_options
from kun.cli.options import home_option, store_option

if TYPE_CHECKING:
    from kun.server.connections import ConnectionLimits

__all__ = ["serve"]

EXIT_REFUSED = 2


def _refuse(message: str) -> None:
    click.echo(f"kun: error: {message}", err=True)
    sys.exit(EXIT_REFUSED)


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port."
)
@click.option(
    "--token-env",
    "token_env",
    default=None,
    metavar="VAR",
    help="Require 'Authorization: Bearer <token>', the token read from $VAR.",
)
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="kun.toml to use (default: $KUN_CONFIG, ./kun.toml, $KUN_HOME/kun.toml).",
)
@click.option(
    "--max-connections",
    type=click.IntRange(1),
    default=1000,
    show_default=True,
    help="Open connections (event streams too) before new ones get 503; "
    "at most half the open-files limit.",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="A request's headers must arrive within this, else 408 and the connection closes.",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(0, min_open=True),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="A body's grace before it must keep up 16 KiB/s, else 408.",
)
@click.option(
    "--workspace-root",
    "workspace_roots",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="With --store: run only the turns of threads whose workspace lies under DIR "
    "(repeatable; default: every workspace). Other workers take the rest.",
)
@runtime_options
@store_option
@home_option
def serve(
    host: str,
    port: int,
    token_env: str | None,
    config: Path | None,
    max_connections: int,
    header_timeout: float,
    body_timeout: float,
    workspace_roots: tuple[Path, ...],
    home: Path | None,
) -> None:
    """Serve the HTTP API: threads and turns over HTTP, followed by
    Server-Sent Events. Ctrl-C (or SIGTERM) interrupts running turns (the
    log records them as aborted) and stops. With --store URL (or [store]
    url), the threads are those of a PostgreSQL database."""
    from kun.server.auth import NeedsToken, check_bind
    from kun.tools.environment import hold_secret, take_variable

    token: str | None = None
    if token_env is not None:
        token = take_variable(token_env) or None  # no command the model runs inherits it
        if token is None:
            _refuse(f"--token-env {token_env}: ${token_env} is not set or empty")
        else:
            hold_secret(token)
    try:
        check_bind(host, token)
    except NeedsToken as exc:
        _refuse(str(exc))
    _check_free(host, port)
    from kun.server.connections import ConnectionLimits

    limits = ConnectionLimits(
        header_seconds=header_timeout, body_seconds=body_timeout, max_connections=max_connections
    )
    _run(host, port, token, config, home, limits, workspace_roots)


def _check_free(host: str, port: int) -> None:
    """A port already taken is one line before anything starts; uvicorn
    would log it among its startup lines and exit 3."""
    import socket

    if port == 0:
        return
    try:
        socket.create_server((host, port)).close()
    except OSError as exc:
        _refuse(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


def _run(
    host: str,
    port: int,
    token: str | None,
    config: Path | None,
    home: Path | None,
    limits: ConnectionLimits,
    workspace_roots: tuple[Path, ...] = (),
) -> None:
    from kun.app.home import resolve_home
    from kun.app.sandboxing import require_sandbox, sandbox_settings, serving
    from kun.app.stores import chosen_store, reach
    from kun.cli.options import given_store
    from kun.config import load_config
    from kun.model.factory import build_router
    from kun.observe.setup import preflight
    from kun.server.app import create_app
    from kun.server.backend import backend_from_config
    from kun.server.runner import serve as run_server
    from kun.tools.sandbox import SandboxUnavailable

    root = resolve_home(home)
    store = chosen_store(given_store(), root, config)
    if store is not None:
        reach(root, store)
    elif workspace_roots:
        _refuse(
            "--workspace-root needs --store (or [store] url): a server on a home "
            "runs every thread of it"
        )
    roots = tuple(os.path.realpath(folder) for folder in workspace_roots) or ("/",)
    loaded = serving(load_config(config, home=root))  # commands run sandboxed unless "off"
    try:
        require_sandbox(sandbox_settings(loaded, root), None)
    except SandboxUnavailable as exc:
        _refuse(str(exc))
    flags = runtime_flags()
    router = build_router(loaded)  # a missing key is one line here, not a traceback in uvicorn
    preflight(loaded)  # and so is tracing asked for but not installed
    app = create_app(
        lambda: backend_from_config(root, loaded, flags, router=router, store=store),
        token=token,
        wait_listening=True,
        workspace_roots=roots,
    )
    run_server(app, host, port, limits)
