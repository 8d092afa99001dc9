"""The adapter a command works through, chosen once by the composition root
(:func:`kun.entry.choose_adapter`): the server named by ``--server URL`` or
``$KUN_SERVER``, else the home (``--home``, ``$KUN_HOME``, ``~/.kun``). Commands call
:func:`with_kun` and never reach past :class:`~kun.app.interface.Kun`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import click

from kun.app.connect import LocalTarget, RemoteTarget, Target, open_kun
from kun.app.interface import Kun
from kun.app.overrides import RuntimeFlags

__all__ = ["command_target", "first_leaf", "run_explained", "with_kun"]

T = TypeVar("T")


def command_target(
    home: Path | None, *, config: Path | None = None, flags: RuntimeFlags | None = None
) -> Target:
    """The running command's target. With a server, a ``--home``,
    ``--config`` or ``--store`` given is a usage error (they mean something
    only here). Here, the threads are in the database ``--store`` names,
    else ``[store] url`` names, else in the home (:mod:`kun.app.stores`)."""
    from kun.cli.options import given_store
    from kun.cli.remote import local_only, remote_target

    given = given_store()
    remote = remote_target()
    if remote is not None:
        local_only(home=home, config=config)
        if given is not None:
            raise click.UsageError("--store works here, not with --server")
        return RemoteTarget(remote.url, remote.token, remote.token_env)
    from kun.app.home import resolve_home
    from kun.app.stores import chosen_store

    root = resolve_home(home)
    store = chosen_store(given, root, config)
    return LocalTarget(root, config, flags or RuntimeFlags(), store)


def with_kun(target: Target, body: Callable[[Kun], Awaitable[T]]) -> T:
    """``await body(kun)`` on the target's adapter, from synchronous code
    (a click command), explained as :func:`run_explained` says."""

    async def go() -> T:
        async with open_kun(target) as kun:
            return await body(kun)

    return run_explained(target, go)


def run_explained(target: Target, go: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(go)``; with a server, one that cannot be used is one line
    in the client's words (:func:`kun.client.explained`: a token missing or
    refused named by its variable), whatever task group wrapped it."""
    import anyio

    if not isinstance(target, RemoteTarget):
        return anyio.run(go)
    from kun.app.refusals import Refused
    from kun.client import explained
    from kun.errors import UserMistake

    token_given = target.token is not None
    with explained(target.url, token_given=token_given, token_env=target.token_env):
        try:
            return anyio.run(go)
        except BaseExceptionGroup as group:
            leaf = first_leaf(group)
            if isinstance(leaf, Refused | UserMistake):
                raise leaf from None
            raise


def first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error a task group wrapped (its first, however deep)."""
    leaf: BaseException = group
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf
