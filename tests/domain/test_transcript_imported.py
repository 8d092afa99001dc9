"""A transcript says where an imported thread came from: the
``thread_imported`` line explains why a rewind leaves the earlier files
alone, in the whole transcript and in a ``--from-seq`` page that reaches it."""

from __future__ import annotations

import msgspec

from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.domain.transcript import render_since, render_transcript
from kun.testing.golden_threads import THREADS

LINE = "-- imported from bundle at seq 79: file changes before this are never restored here --"


def test_the_whole_transcript_names_the_import() -> None:
    assert LINE in render_transcript(replay(THREADS["imported_thread"]()))


def test_a_thread_never_imported_has_no_such_line() -> None:
    lines = render_transcript(replay(THREADS["forked_thread"]()))
    assert not any(line.startswith("-- imported from") for line in lines)


def test_a_page_shows_the_import_only_if_it_reaches_it() -> None:
    events = THREADS["imported_thread"]()
    state = replay(events)
    assert LINE in render_since(replay(events[:70]), state)
    assert LINE not in render_since(replay(events[:85]), state)


def test_the_source_and_the_new_workspace_are_shown_safely() -> None:
    events = THREADS["imported_thread"]()
    last = events[78]
    assert isinstance(last, ev.ThreadImported)
    events[78] = msgspec.structs.replace(last, source="codex", workspace="/w/\x1b[2Jx")
    lines = render_transcript(replay(events))
    [line] = [line for line in lines if line.startswith("-- imported from")]
    assert line.startswith("-- imported from codex at seq 79 into workspace /w/")
    assert "\x1b" not in line
