"""Where a surface gets its :class:`~kun.app.interface.Kun`: the one place
that picks the adapter (the composition root calls :func:`open_kun` with
the target the command line named).

A :class:`LocalTarget` opens the in-process adapter over a home on this
machine (:mod:`kun.app.local`); a :class:`RemoteTarget` the HTTP adapter
over a running ``kun serve`` (:class:`kun.client.AsyncKunClient`). The
heavy layers are imported only when the target is opened, so ``kun
--help`` and ``kun replay`` stay fast.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kun.app.interface import Kun
from kun.app.overrides import RuntimeFlags

__all__ = ["LocalTarget", "RemoteTarget", "Target", "open_kun"]


@dataclass(frozen=True)
class LocalTarget:
    """The threads of ``home``, run here: ``config`` is the kun.toml named
    on the command line (``None``: the usual search), ``flags`` the runtime
    flags given (they override the config's ``[runtime]``), ``store`` the
    database that holds the threads (``None``: the home's files;
    :mod:`kun.app.stores`)."""

    home: Path
    config: Path | None = None
    flags: RuntimeFlags = field(default_factory=RuntimeFlags)
    store: str | None = None


@dataclass(frozen=True)
class RemoteTarget:
    """A running ``kun serve``; the token is read from ``$token_env``."""

    url: str
    token: str | None = None
    token_env: str = "KUN_TOKEN"


Target = LocalTarget | RemoteTarget


@asynccontextmanager
async def open_kun(target: Target) -> AsyncIterator[Kun]:
    """The adapter for ``target``, open until the block ends."""
    if isinstance(target, RemoteTarget):
        from kun.client import AsyncKunClient

        async with AsyncKunClient(target.url, token=target.token) as client:
            yield client
        return
    from kun.app.local import open_local

    async with open_local(
        target.home, config=target.config, flags=target.flags, store=target.store
    ) as kun:
        yield kun
