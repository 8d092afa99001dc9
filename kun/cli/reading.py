"""How a command reaches its :class:`~kun.app.interface.Kun`
(:func:`on_kun`), and the reads that take a THREAD which may be an
``events.jsonl`` FILE (``kun replay``, ``kun usage``): a file is read here,
on this machine, by :class:`kun.app.logfile.LogFile`; a thread id goes to
the command's Kun, opened only when one is named."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from kun.app.interface import Kun

__all__ = ["on_kun", "with_kun_if"]

T = TypeVar("T")


def on_kun(
    home: Path | None, body: Callable[[Kun], Awaitable[T]], *, config: Path | None = None
) -> T:
    """``body`` with the command's :class:`Kun` (:mod:`kun.cli.target`,
    imported only once a command runs, so ``kun --help`` stays fast)."""
    from kun.cli.target import command_target, with_kun

    return with_kun(command_target(home, config=config), body)


def with_kun_if(home: Path | None, needed: bool, body: Callable[[Kun | None], Awaitable[T]]) -> T:
    """``body`` with the command's :class:`Kun` when ``needed``, else with
    ``None`` (every THREAD is a file: no home or server is used)."""
    if needed:
        return on_kun(home, body)
    import anyio

    return anyio.run(body, None)
