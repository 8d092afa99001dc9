"""How a session draws a turn: above the prompt, a block at a time.

The assistant's text is Markdown. It is shown as it streams, a line at a
time: each complete line as it ends, a fenced code block once its fence
closes, a table with the line after it, the rest when the message
completes; each piece is rendered by rich (headings, lists, emphasis, code
highlighted). So nothing is drawn twice and nothing half-drawn is left
behind the prompt. Lines (tool calls, results,
warnings) are printed as they come, after whatever text came before them.

The "waiting for the model" status is not written into the scrollback: the
prompt's toolbar shows it (:attr:`ChatSink.status`). A file write's diff
is drawn highlighted (:meth:`ChatSink.diff`).
"""

from __future__ import annotations

import shutil
import sys
from typing import Any

from kun.cli.colors import color_allowed
from kun.cli.terminal import Tone
from kun.domain.shown import shown

__all__ = ["ChatSink", "split_blocks"]

_RICH_STYLES: dict[Tone, str] = {
    "plain": "",
    "dim": "dim",
    "tool": "cyan",
    "warn": "yellow",
    "error": "red",
    "good": "green",
}


def split_blocks(text: str) -> tuple[str, str]:
    """``text`` cut after its last line that can be drawn on its own: a
    complete line outside a code fence and a table, a closed fence, or a
    table with the line after it."""
    in_fence = False
    cut = 0
    position = 0
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        position += len(line)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
            if not in_fence:
                cut = position
        elif not in_fence and not stripped.startswith("|"):
            cut = position
    return text[:cut], text[cut:]


class ChatSink:
    """A :class:`~kun.cli.terminal.Sink` for the session (see the module
    docstring). The rich console is made on first use, writing to whatever
    ``sys.stdout`` is then (the prompt's patched stdout)."""

    def __init__(self, *, color: bool = True) -> None:
        self.color = color and color_allowed()
        self._console: Any = None
        self._pending: dict[str, str] = {}
        self.waiting_for_model = False

    @property
    def status(self) -> str:
        return "waiting for the model" if self.waiting_for_model else ""

    def _rich(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(
                file=sys.stdout,
                force_terminal=self.color,
                no_color=not self.color,
                width=shutil.get_terminal_size((100, 40)).columns,
                highlight=False,
            )
        return self._console

    def text(self, item_id: str, fragment: str) -> None:
        ready, rest = split_blocks(self._pending.get(item_id, "") + shown(fragment))
        self._pending[item_id] = rest
        if ready:
            self._markdown(ready)

    def text_done(self, item_id: str, text: str) -> None:
        rest = self._pending.pop(item_id, "")
        if rest:
            self._markdown(rest)

    def line(self, text: str, tone: Tone = "plain") -> None:
        self._flush_pending()
        from rich.text import Text

        self._rich().print(Text(shown(text), style=_RICH_STYLES[tone]), soft_wrap=True)
        sys.stdout.flush()

    def diff(self, text: str) -> None:
        """A unified diff, highlighted as one (a note in parentheses dim)."""
        self._flush_pending()
        text = shown(text)
        from rich.padding import Padding
        from rich.syntax import Syntax
        from rich.text import Text

        if text.startswith("("):
            body: Any = Text(text, style="dim")
        else:
            body = Syntax(text, "diff", theme="monokai", background_color="default")
        self._rich().print(Padding(body, (0, 0, 0, 3), expand=False))
        sys.stdout.flush()

    def waiting(self, on: bool) -> None:
        self.waiting_for_model = on

    async def animate(self) -> None:
        """Nothing to animate: the toolbar shows the status."""

    def _flush_pending(self) -> None:
        for item_id, rest in list(self._pending.items()):
            if rest:
                self._markdown(rest)
            self._pending[item_id] = ""

    def _markdown(self, text: str) -> None:
        """Blank lines are kept as they are (rich would drop them at the
        edges of a piece); the rest is rendered."""
        from rich.markdown import Markdown

        body = text.strip("\n")
        blank = len(text) - len(text.lstrip("\n")) - (0 if body else 1)
        console = self._rich()
        for _ in range(max(blank, 0)):
            console.print()
        if body.strip():
            console.print(Markdown(body, code_theme="monokai"))
        sys.stdout.flush()
