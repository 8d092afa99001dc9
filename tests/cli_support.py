"""The CLI invoked from an async test: a command runs its own event loop
(``anyio.run``), which cannot start on a thread whose loop is running, so
it runs on a worker thread as it would from a shell."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio.to_thread
from click.testing import CliRunner, Result

from kun.entry import cli


async def invoked(args: Sequence[str], **kwargs: Any) -> Result:
    """``kun ARGS`` through :class:`click.testing.CliRunner`."""
    return await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli, list(args), **kwargs))
