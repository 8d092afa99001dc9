"""One line, not a flood, when ``kun serve`` runs out of file descriptors.

When ``accept()`` fails for want of a resource (``EMFILE``: too many open
files), asyncio's accept loop reports it to the loop's exception handler,
with a traceback, once per connection waiting in the backlog (up to
2,048 per wake on Linux, every second while it lasts): hundreds of
megabytes of log in a minute, and the CPU spent writing them. Each of
those reports also schedules a retry a second later; the retries still
pending when the server stops find its socket closed and each report a
``ValueError`` traceback. The handler here says the first once, with the
limit and what to do, then at most once a minute how many more there
were, and drops the stale retries' reports; every other report goes to
the handler that was there before.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any

__all__ = ["ACCEPT_FAILED", "AcceptErrors"]

ACCEPT_FAILED = "socket.accept() out of system resource"
"""The message asyncio reports a resource error of ``accept()`` with."""

_log = logging.getLogger(__name__)


class AcceptErrors:
    """A loop exception handler: install it with :meth:`install`, for the
    loop's life (stale retries come after the server has stopped)."""

    def __init__(self, *, every: float = 60.0) -> None:
        self.every = every
        self._said_at: float | None = None
        self._unsaid = 0
        self._before: Any = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        self._before = loop.get_exception_handler()
        loop.set_exception_handler(self)

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if self._said_at is not None and _stale_retry(context):
            return
        if context.get("message") != ACCEPT_FAILED:
            if self._before is not None:
                self._before(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        now = loop.time()
        if self._said_at is None:
            self._said_at = now
            _log.error(
                "cannot accept connections: %s (this process may open %d files; close "
                "connections or raise `ulimit -n`); retrying every second",
                context.get("exception"),
                resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            )
        elif now - self._said_at >= self.every:
            _log.error(
                "cannot accept connections: %d more failures since the last report",
                self._unsaid + 1,
            )
            self._said_at, self._unsaid = now, 0
        else:
            self._unsaid += 1


def _stale_retry(context: dict[str, Any]) -> bool:
    """A retry of ``accept()`` scheduled after a resource error that ran
    once the listening socket was closed."""
    return isinstance(context.get("exception"), ValueError) and "_start_serving" in repr(
        context.get("handle")
    )
