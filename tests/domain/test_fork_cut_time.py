"""A turn a fork cuts ends at the fork point, not when the fork was made:
a fork taken days later must not show (or charge the goal for) a days-long
turn. Forks logged before ``source_at`` existed replay as they always did."""

from __future__ import annotations

import msgspec

from kun.contracts import events as ev
from kun.contracts.threads import Goal
from kun.domain.fork import fork_events
from kun.domain.reduce import replay
from kun.testing.logbuilder import LogBuilder

DAYS = 3 * 24 * 3600 * 1000


def _source() -> LogBuilder:
    b = LogBuilder("t_src")
    b.create(workspace="/w", title="demo")
    b.update(goal=Goal(objective="ship it", token_budget=100_000))
    b.start_turn("work")
    b.assistant_text(["thinking"], complete=False)
    return b


def test_a_cut_turn_ends_at_the_last_event_kept() -> None:
    b = _source()
    point, point_at = b.seq, b.events[-1].at
    b.complete()
    forked = fork_events(b.events, "t_fork", point, at=b.at + DAYS)
    assert isinstance(forked[-1], ev.ThreadForked) and forked[-1].source_at == point_at
    state = replay(forked)
    (cut,) = state.turns
    assert (cut.status, cut.abort_reason, cut.ended_at) == ("aborted", "forked", point_at)
    goal = state.settings.goal
    assert goal is not None and goal.time_used_ms == point_at - cut.started_at


def test_a_fork_at_a_settled_point_is_logged_as_before() -> None:
    b = _source()
    b.complete()
    forked = fork_events(b.events, "t_fork", b.seq, at=b.at + DAYS)
    assert b"source_at" not in msgspec.json.encode(forked[-1])


def test_a_fork_logged_before_source_at_ends_its_cut_turn_at_the_fork() -> None:
    b = _source()
    forked = fork_events(b.events, "t_fork", b.seq, at=b.at + DAYS)
    old = [*forked[:-1], msgspec.structs.replace(forked[-1], source_at=None)]
    assert replay(old).turns[0].ended_at == b.at + DAYS
