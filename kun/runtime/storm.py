"""The tool-storm breaker (SPEC §7.3): a model calling the same tool with the
same arguments again and again is stopped, not obeyed.

Per turn, the last 8 calls are remembered by tool name and canonical
arguments (keys sorted at every depth). The third identical call in that
window is not run: the model gets an error result telling it to continue
from the answer it already has. Questions to the user are exempt (not in
an unattended turn, which has no question tool to call). A call
that changes files clears the read-only entries, because re-reading a file
that just changed is not a repeat.

Suppressing a call does not stop a model that keeps sending it: it may
answer every refusal with the same call again (180 model calls in 6 s were
seen). So the breaker also counts the calls it suppressed in a row; any
call it lets through resets the count. Once :data:`STOP_AFTER` were
suppressed in a row, :meth:`StormBreaker.stop_reason` says why the turn must
end (the loop fails it with ``tool_storm_stopped``): the model was told
each time, and is not listening.
"""

from __future__ import annotations

from collections import deque

import msgspec

WINDOW = 8
REPEATS = 3
STOP_AFTER = 3
"""Suppressed calls in a row, with no call let through between them, that
end the turn."""
EXEMPT = frozenset({"request_user_input", "user_input"})
_canonical = msgspec.json.Encoder(order="sorted").encode


class StormBreaker:
    __slots__ = ("_exempt", "_last", "_refused", "_window")

    def __init__(self, exempt: frozenset[str] = EXEMPT) -> None:
        """``exempt``: the tools never counted; an unattended turn, which
        has no question tool, passes none (a call of it is refused)."""
        self._exempt = exempt
        self._window: deque[tuple[str, bytes, bool]] = deque(maxlen=WINDOW)
        self._refused = 0
        self._last: tuple[str, int] = ("", 0)

    def admit(self, name: str, arguments: bytes, *, read_only: bool, changes_files: bool) -> int:
        """Record the call; return 0 to run it, or how many identical calls
        the window holds (this one included) when it must be suppressed."""
        if name in self._exempt:
            self._refused = 0
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
        if repeats < REPEATS:
            self._refused = 0
            return 0
        self._refused += 1
        self._last = (name, repeats)
        return repeats

    def stop_reason(self) -> str | None:
        """Why the turn must end, or ``None`` while it may go on."""
        if self._refused < STOP_AFTER:
            return None
        name, repeats = self._last
        return (
            f"the model kept repeating tool calls kun had refused: {self._refused} calls in "
            f"a row were not run (the last, {name}, was call number {repeats} with the same "
            "arguments), so the turn was stopped instead of looping"
        )
