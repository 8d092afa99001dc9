"""A fork taken at any seq of any legal log is settled: no turn open, the
thread not ``running``, nothing pending, every turn the point cut ended as
aborted (``forked``) and named by the note the CLI prints."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import OPEN_STATUSES
from kun.domain.fork import cut_note, cut_turns, fork_events
from kun.domain.reduce import replay
from tests.properties.strategies import thread_logs


@given(thread_logs(max_steps=30), st.data())
def test_a_fork_at_any_seq_is_settled(events: list[ev.Event], data: st.DataObject) -> None:
    at_seq = data.draw(st.integers(1, events[-1].seq))
    source = replay([e for e in events if e.seq <= at_seq])
    fork = replay(fork_events(events, "t_fork", at_seq, at=events[-1].at + 1))
    open_at_cut = [t.turn_id for t in source.turns if not t.settled]
    assert all(t.settled for t in fork.turns)
    assert fork.status != "running"
    if open_at_cut:
        assert fork.status == "idle"
    assert fork.pending_approvals == () and fork.pending_user_inputs == ()
    assert all(t.tools_in_flight == () for t in fork.turns)
    assert all(i.status not in OPEN_STATUSES for t in fork.turns for i in t.items)
    cut = cut_turns(fork)
    assert [t.turn_id for _, t in cut] == open_at_cut
    assert all(t.status == "aborted" for _, t in cut)
    note = cut_note(fork)
    if open_at_cut:
        assert note is not None and open_at_cut[-1] in note
        assert fork.forked_from is not None and f"seq {fork.forked_from.seq} " in note
    else:
        assert note is None
