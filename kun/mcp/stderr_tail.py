"""The last lines a stdio MCP server wrote to its stderr, for the message
that says why it failed.

A server that cannot start usually says why on stderr (a missing module,
a bad flag, an unset variable) and then exits, which the client sees only
as "Connection closed". kun reads the server's stderr through a pipe for
as long as the server runs and keeps its last :data:`KEPT_BYTES` in
memory, never on disk and never in the log: the message built from it
holds at most :data:`SHOWN_LINES` lines, each cut to
:data:`SHOWN_CHARS`, with the values of the variables the server was
given (its ``env``) replaced by ``[redacted]`` and terminal escapes and
control characters dropped. A server that writes to stderr forever costs a bounded buffer,
and one whose stderr nobody read would block on a full pipe: so the pipe
is read to its end.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import TextIO

import anyio

__all__ = ["StderrTail"]

KEPT_BYTES = 8192
SHOWN_LINES = 5
SHOWN_CHARS = 200
_READ = 65536
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")
"""Terminal escape sequences (colours), dropped whole."""


class StderrTail:
    """A pipe for a server's stderr and the tail of what came through it.
    ``secrets``: values never to show."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted((s for s in secrets if s), key=len, reverse=True)
        self._kept = bytearray()
        self._cut = False

    def pipe(self) -> tuple[int, TextIO]:
        """A new pipe: the end to :meth:`drain`, and the file the server's
        stderr is given (close it once the server started: the server
        holds its own copy, and its end of file is the server's)."""
        read, write = os.pipe()
        os.set_blocking(read, False)
        return read, os.fdopen(write, "w")

    async def drain(self, fd: int) -> None:
        """Read ``fd`` to its end (or until cancelled, when what is already
        in the pipe is still taken), then close it."""
        try:
            while True:
                await anyio.wait_readable(fd)
                if not self._read_ready(fd):
                    return
        finally:
            self._read_ready(fd)
            os.close(fd)

    def _read_ready(self, fd: int) -> bool:
        """Take what the pipe holds now; ``False`` at its end."""
        while True:
            try:
                data = os.read(fd, _READ)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            self.feed(data)

    def feed(self, data: bytes) -> None:
        self._kept += data
        if len(self._kept) > KEPT_BYTES:
            del self._kept[:-KEPT_BYTES]
            self._cut = True

    def lines(self) -> list[str]:
        """The last lines worth showing, cleaned and redacted."""
        text = self._kept.decode("utf-8", "replace")
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        every = text.splitlines()[1:] if self._cut else text.splitlines()  # a line's end only
        shown = []
        for line in every[-SHOWN_LINES * 4 :]:
            clean = "".join(c for c in _ESCAPE.sub("", line) if c.isprintable()).strip()
            if clean:
                cut = clean if len(clean) <= SHOWN_CHARS else clean[: SHOWN_CHARS - 1] + "…"
                shown.append(cut)
        return shown[-SHOWN_LINES:]

    def explain(self, failure: str) -> str:
        """``failure`` and, when the server wrote any, its last lines."""
        lines = self.lines()
        return f"{failure}; its stderr ended: {' | '.join(lines)}" if lines else failure
