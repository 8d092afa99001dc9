"""Reading a log the way every kun reader will: strictly, to the end."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kun.contracts.events import Event
from kun.domain.reduce import Projector
from kun.domain.state import ThreadState
from kun.store.reader import read_log
from kun.store.replay import apply_named

__all__ = ["LogFacts", "check_log"]


class LogFacts:
    """What a replay of a log found: its events, last seq and projection."""

    def __init__(self) -> None:
        self.events = 0
        self.last_seq = 0
        self.state: ThreadState | None = None

    def count(self, events: Iterator[Event]) -> Iterator[Event]:
        for event in events:
            self.events += 1
            self.last_seq = event.seq
            yield event


def check_log(path: Path) -> LogFacts:
    """Replay the log at ``path`` strictly (its directory names the thread);
    raises ``CorruptLog`` naming the line of anything a reader would refuse."""
    facts = LogFacts()
    projector = Projector()
    apply_named(projector, path, facts.count(read_log(path)))
    facts.state = projector.snapshot()
    return facts
