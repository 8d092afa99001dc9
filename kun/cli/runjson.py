"""``kun run --json``: the turn's events on stdout, for scripts.

Each line is one event exactly as the log writes it
(:func:`kun.app.live.event_line`), so anything that reads a log reads
this (``kun.store.codec.decode_line`` decodes every line). For a new thread
the lines start at ``thread_created``; for ``--thread``, after the events the
thread already had. From there every event of the thread is printed once, in
seq order, to the end of the run: with ``--goal`` that includes what is
written between turns (the goal blocked, its warning, a changed goal), so
the output is the log's lines from that point on. Nothing else goes to
stdout: stderr gets the lines a person must see (an approval being asked,
warnings, errors, an interrupted turn) and the closing status line; an
approval is asked on the terminal as without ``--json`` (denied when there
is none).
"""

from __future__ import annotations

from typing import BinaryIO, TextIO

from kun.app.interface import Kun
from kun.app.live import event_line
from kun.cli.terminal import LiveView, Prompter, Tone
from kun.contracts import events as ev
from kun.domain.shown import shown
from kun.errors import UserMistake

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
            self.err.write(shown(text) + "\n")
            self.err.flush()

    def waiting(self, on: bool) -> None:
        """No spinner: stdout is for the events."""

    async def animate(self) -> None:
        """Nothing to animate."""


class JsonView(LiveView):
    """A live view that writes every event of the thread to ``out`` as its
    log line as it arrives, then handles it as usual (an approval is asked
    after its line is out, so a script sees what is being asked). Durable
    events only, no previews: the output is the log's bytes. Every turn of
    a run is shown from one feed, so nothing between turns (``kun run
    --goal``) is skipped and nothing is written twice."""

    live = False

    def __init__(
        self,
        kun: Kun,
        thread_id: str,
        out: BinaryIO,
        err: TextIO,
        prompter: Prompter | None = None,
    ) -> None:
        super().__init__(kun, thread_id, QuietSink(err), prompter)
        self.out = out
        self.written = 0
        """The seq of the last line out (set to where the output starts)."""

    def received(self, event: ev.Event) -> None:
        self._write(event)

    def _write(self, event: ev.Event) -> None:
        self.out.write(event_line(event))
        self.out.flush()
        self.written = event.seq

    async def drain(self) -> None:
        """The thread's events not written yet, once the run is over: those
        after a signal stopped the view (the turn records its end later),
        and those written once the last turn settled (a blocked goal)."""
        last = (await self.kun.thread(self.thread_id)).last_seq
        if self.written >= last:
            return
        async with self.kun.follow(self.thread_id, after=self.written) as feed:
            async for event in feed:
                self._write(event)
                if event.seq >= last:
                    return


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
