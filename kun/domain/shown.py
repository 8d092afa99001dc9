"""Text kun did not write, made safe to put on a terminal.

A model reply, a tool's output or arguments, a title the model set, an
imported session or a provider's error body may hold an ESC or C1 sequence
that retitles the terminal, writes the clipboard (OSC 52), clears the
screen or draws a fake kun prompt. Every place that writes such text to a
person's terminal passes it through :func:`shown` first (a whole view) or
:func:`shown_cell` (one cell of a listing, which must stay on one line):
each C0 control except newline and tab, DEL and each C1 control becomes a
visible ``\\xNN``; a ``\\r\\n`` line end becomes ``\\n`` (and a ``\\r``
ending a line split from one, or a streamed piece, is dropped). kun's own styling
is added after, so it keeps working. Machine output (``--json``) is never
passed through here: it stays byte-exact.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CELL_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def shown(text: str) -> str:
    """``text`` with its line breaks and tabs kept and every other control
    character visible as ``\\xNN``; unchanged text (the usual case) is
    returned as it is after one scan."""
    if _CONTROL.search(text) is None:
        return text
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(_escape, text[:-1] if text.endswith("\r") else text)


def shown_cell(text: str) -> str:
    """``text`` for one cell or one line: newlines and tabs are shown as
    ``\\xNN`` too, so a value cannot start a line of its own."""
    if _CELL_CONTROL.search(text) is None:
        return text
    return _CELL_CONTROL.sub(_escape, text)
