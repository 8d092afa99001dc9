"""The reads that take a THREAD which may be an ``events.jsonl`` FILE
(``kun replay``, ``kun usage``): a file is read here, on this machine, by
:class:`kun.app.logfile.LogFile`; a thread id goes to the command's
:class:`~kun.app.interface.Kun`, opened only when one is named."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kun.cli.target import command_target, with_kun

if TYPE_CHECKING:
    from kun.app.interface import Kun

__all__ = ["with_kun_if"]

T = TypeVar("T")


def with_kun_if(home: Path | None, needed: bool, body: Callable[[Kun | None], Awaitable[T]]) -> T:
    """``body`` with the command's :class:`Kun` when ``needed``, else with
    ``None`` (every THREAD is a file: no home or server is used)."""
    if needed:
        return with_kun(command_target(home), body)
    import anyio

    return anyio.run(body, None)
