"""The tool-storm breaker (SPEC §7.3): a model calling the same tool with the
same arguments again and again is stopped, not obeyed.

Per turn, the last 8 calls are remembered by tool name and canonical
arguments (keys sorted at every depth). The third identical call in that
window is not run: the model gets an error result telling it to continue
from the answer it already has. Questions to the user are exempt. A call
that changes files clears the read-only entries, because re-reading a file
that just changed is not a repeat.
"""

from __future__ import annotations

from collections import deque

import msgspec

WINDOW = 8
REPEATS = 3
EXEMPT = frozenset({"request_user_input", "user_input"})
_canonical = msgspec.json.Encoder(order="sorted").encode


class StormBreaker:
    __slots__ = ("_window",)

    def __init__(self) -> None:
        self._window: deque[tuple[str, bytes, bool]] = deque(maxlen=WINDOW)

    def admit(self, name: str, arguments: bytes, *, read_only: bool, changes_files: bool) -> int:
        """Record the call; return 0 to run it, or how many identical calls
        the window holds (this one included) when it must be suppressed."""
        if name in EXEMPT:
            return 0
        try:
            key = _canonical(msgspec.json.decode(arguments))
        except msgspec.DecodeError:
            key = arguments
        repeats = 1 + sum(1 for n, k, _ in self._window if n == name and k == key)
        if changes_files:
            kept = [entry for entry in self._window if not entry[2]]
            self._window.clear()
            self._window.extend(kept)
        self._window.append((name, key, read_only))
        return repeats if repeats >= REPEATS else 0
