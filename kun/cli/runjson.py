"""``kun run --json``: the turn's events on stdout, for scripts.

Each line is one event exactly as the log writes it
(:func:`kun.store.codec.encode_line`), so anything that reads a log reads
this (``kun.store.codec.decode_line`` decodes every line). For a new thread
the lines start at ``thread_created``; for ``--thread``, after the events the
thread already had. Nothing else goes to stdout: stderr gets the lines a
person must see (an approval being asked, warnings, errors, an interrupted
turn) and the closing status line; an approval is asked on the terminal as
without ``--json`` (denied when there is none).
"""

from __future__ import annotations

from typing import BinaryIO, TextIO

from kun.cli.terminal import LiveView, Prompter, Tone
from kun.contracts import events as ev
from kun.errors import UserMistake
from kun.runtime.service import TurnService
from kun.store.codec import encode_line

__all__ = ["JsonView", "QuietSink", "prompt_argument"]

_SHOWN: frozenset[Tone] = frozenset({"warn", "error"})


class QuietSink:
    """A sink that drops the turn's text and keeps only warnings and errors
    (on ``err``): the events carry the rest."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def text(self, item_id: str, fragment: str) -> None:
        """Dropped: the deltas are on stdout."""

    def text_done(self, item_id: str, text: str) -> None:
        """Dropped."""

    def line(self, text: str, tone: Tone = "plain") -> None:
        if tone in _SHOWN:
            self.err.write(text + "\n")
            self.err.flush()

    def waiting(self, on: bool) -> None:
        """No spinner: stdout is for the events."""

    async def animate(self) -> None:
        """Nothing to animate."""


class JsonView(LiveView):
    """A live view that writes every event it is shown to ``out`` first, as
    its log line, then handles it as usual (an approval is asked after its
    line is out, so a script sees what is being asked). Durable events
    only, no previews: the output is the log's bytes."""

    live = False

    def __init__(
        self,
        service: TurnService,
        thread_id: str,
        out: BinaryIO,
        err: TextIO,
        prompter: Prompter | None = None,
    ) -> None:
        super().__init__(service, thread_id, QuietSink(err), prompter)
        self.out = out
        self.turn_id: str | None = None
        self.written = 0

    async def follow(self, after: int, turn_id: str) -> None:
        self.turn_id = turn_id
        self.written = max(self.written, after)
        await super().follow(after, turn_id)

    async def show(self, event: ev.Event) -> None:
        self._write(event)
        await super().show(event)

    def _write(self, event: ev.Event) -> None:
        self.out.write(encode_line(event))
        self.out.flush()
        self.written = event.seq

    async def drain(self) -> None:
        """The turn's events the view was not shown: a signal stops the view
        before the turn records its end."""
        if self.turn_id is None:
            return
        recorder = self.service.recorder
        await recorder.flush(self.thread_id)
        for event in recorder.store.read(self.thread_id, after=self.written):
            if event.turn_id in (None, self.turn_id):
                self._write(event)


def prompt_argument(argument: str, stdin: TextIO) -> str:
    """The prompt ``kun run`` was given: ``-`` is all of stdin (one trailing
    newline dropped, as ``echo`` adds one), anything else is the prompt."""
    if argument != "-":
        return argument
    try:
        text = stdin.buffer.read().decode()  # strictly: a C locale would smuggle bytes in
    except UnicodeDecodeError as exc:
        raise UserMistake(f"the prompt on stdin is not UTF-8 text ({exc.reason})") from exc
    return text.removesuffix("\n").removesuffix("\r")
