"""The events a fork starts with."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from kun.contracts import events as ev


def fork_events(
    source: Iterable[ev.Event], new_thread_id: str, up_to_seq: int, at: int
) -> list[ev.Event]:
    """A forked thread's initial log: the source's events up to ``up_to_seq``,
    re-addressed to ``new_thread_id`` (seqs kept, so positions stay comparable),
    then ``thread_forked`` recording the lineage. The fork is self-contained:
    replaying it never needs the source log."""
    copied: list[ev.Event] = []
    source_id = ""
    for event in source:
        if event.seq > up_to_seq:
            break
        source_id = event.thread_id
        copied.append(msgspec.structs.replace(event, thread_id=new_thread_id))
    last = copied[-1].seq if copied else 0
    copied.append(
        ev.ThreadForked(
            seq=last + 1,
            at=at,
            thread_id=new_thread_id,
            source_thread_id=source_id,
            source_seq=last,
        )
    )
    return copied
