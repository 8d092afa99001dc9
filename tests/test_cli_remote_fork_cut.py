"""``kun --server URL fork --at-seq N`` with N inside a turn prints the same
note on stderr as the local fork (the wording of
:func:`kun.domain.fork.cut_note`), and nothing when N falls between turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts import events as ev
from kun.domain.fork import cut_note
from kun.domain.reduce import replay
from tests.test_cli_remote import ANSWER, _thread_of, serving

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_remote_fork_inside_a_turn_notes_the_cut(tmp_path: Path) -> None:
    async with serving(tmp_path, [ANSWER]) as s:
        thread = _thread_of(await s.kun("run", "one"))
        events = s.events(thread)
        inside = next(e.seq for e in events if isinstance(e, ev.TurnStarted)) + 1
        cut = await s.kun("fork", thread, "--at-seq", str(inside))
        assert cut.returncode == 0, cut
        new = cut.stdout.decode().strip()
        note = cut_note(replay(s.events(new)))
        assert note is not None
        assert cut.stderr.decode() == f"kun: note: {note}\n"
        whole = await s.kun("fork", thread, "--at-seq", str(events[-1].seq))
        assert whole.returncode == 0 and whole.stderr == b"", whole
