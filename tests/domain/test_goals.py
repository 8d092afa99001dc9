"""Goal accounting (SPEC §7.1): time and tokens are charged by the reducer
from the turns that ran while the goal was active, so any split of the log
replays to the same numbers."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts.model import ToolSpec
from kun.contracts.threads import Goal
from kun.domain.goals import (
    budget_exhausted,
    describe_goal,
    goal_instruction,
    keep_goal_tools,
    tokens_used,
)
from kun.domain.reduce import fold, replay
from kun.domain.transcript import render_transcript
from kun.testing.logbuilder import LogBuilder

GOAL = Goal(objective="Ship it", token_budget=1_000, created_at=1_767_225_600_000)


def _goal_turn(log: LogBuilder, wait_ms: int, prompt: int, completion: int) -> None:
    log.start_turn("work")
    log.wait(wait_ms)
    log.usage(prompt_tokens=prompt, completion_tokens=completion)
    log.complete()


def test_a_turn_under_an_active_goal_is_charged_its_wall_time_and_tokens() -> None:
    log = LogBuilder(tick_ms=10)
    log.create(goal=GOAL)
    _goal_turn(log, 5_000, 300, 20)
    goal = replay(log.events).settings.goal
    assert goal is not None
    turn = replay(log.events).turns[0]
    assert goal.time_used_ms == turn.duration_ms == 5_030
    assert tokens_used(goal) == 320


def test_turns_without_an_active_goal_are_not_charged() -> None:
    log = LogBuilder()
    log.create()
    _goal_turn(log, 1_000, 10, 10)
    log.update(goal=msgspec.structs.replace(GOAL, status="paused"))
    _goal_turn(log, 1_000, 10, 10)
    goal = replay(log.events).settings.goal
    assert goal is not None
    assert (goal.time_used_ms, tokens_used(goal)) == (0, 0)


def test_a_goal_completed_mid_turn_is_charged_up_to_its_completion() -> None:
    log = LogBuilder(tick_ms=10)
    log.create(goal=GOAL)
    log.start_turn("work")
    log.usage(prompt_tokens=100, completion_tokens=5)
    state = replay(log.events)
    assert state.settings.goal is not None
    log.update(goal=msgspec.structs.replace(state.settings.goal, status="complete"))
    log.wait(60_000)
    log.usage(prompt_tokens=100, completion_tokens=5)
    log.complete()
    goal = replay(log.events).settings.goal
    assert goal is not None and goal.status == "complete"
    assert (goal.time_used_ms, tokens_used(goal)) == (30, 105)


def test_an_orphaned_turn_is_charged_its_tokens_but_not_the_downtime() -> None:
    log = LogBuilder()
    log.create(goal=GOAL)
    log.start_turn("work")
    log.usage(prompt_tokens=7, completion_tokens=3)
    log.wait(3 * 86_400_000)
    log.fail("orphaned", "the process died")
    goal = replay(log.events).settings.goal
    assert goal is not None
    assert (goal.time_used_ms, tokens_used(goal)) == (0, 10)


@st.composite
def _goal_logs(draw: st.DrawFn) -> list:  # type: ignore[type-arg]
    log = LogBuilder(tick_ms=draw(st.integers(1, 50)))
    log.create(goal=GOAL)
    for _ in range(draw(st.integers(1, 6))):
        log.start_turn("work")
        for _ in range(draw(st.integers(0, 3))):
            log.wait(draw(st.integers(0, 5_000)))
            log.usage(prompt_tokens=draw(st.integers(0, 500)), completion_tokens=3)
        change = draw(st.sampled_from(["none", "pause", "resume", "complete"]))
        current = replay(log.events).settings.goal
        assert current is not None
        if change != "none":
            status = {"pause": "paused", "resume": "active", "complete": "complete"}[change]
            log.update(goal=msgspec.structs.replace(current, status=status))
        draw(st.sampled_from([log.complete, log.abort, lambda: log.fail("orphaned", "x")]))()
    return log.events


@settings(max_examples=60, deadline=None)
@given(_goal_logs(), st.data())
def test_goal_numbers_do_not_depend_on_where_the_log_is_split(
    events: list, data: st.DataObject
) -> None:  # type: ignore[type-arg]
    cut = data.draw(st.integers(0, len(events)))
    whole = replay(events).settings.goal
    assert fold(replay(events[:cut]), events[cut:]).settings.goal == whole


def test_budget_exhausted_and_described() -> None:
    spent = msgspec.structs.replace(GOAL, tokens_used=1_000, time_used_ms=65_000)
    assert budget_exhausted(spent)
    assert not budget_exhausted(GOAL)
    assert not budget_exhausted(msgspec.structs.replace(spent, token_budget=None))
    text = describe_goal(spent)
    assert "exhausted" in text and "1m 05s" in text and "1,000" in text


def _spec(name: str) -> ToolSpec:
    return ToolSpec(name=name, description=name, parameters=msgspec.Raw(b"{}"))


def test_keep_goal_tools_puts_the_four_back_only_under_an_active_goal() -> None:
    every = tuple(
        _spec(n)
        for n in (
            "read_file",
            "bash",
            "todo_list",
            "todo_write",
            "get_goal",
            "update_goal",
            "create_goal",
        )
    )
    narrowed = (every[0],)
    kept = keep_goal_tools(narrowed, every, GOAL)
    assert [s.name for s in kept] == [
        "read_file",
        "todo_list",
        "todo_write",
        "get_goal",
        "update_goal",
    ]
    assert keep_goal_tools(narrowed, every, None) == narrowed
    paused = msgspec.structs.replace(GOAL, status="paused")
    assert keep_goal_tools(narrowed, every, paused) == narrowed


def test_the_instruction_is_there_only_while_the_goal_is_active() -> None:
    assert goal_instruction(None) is None
    for status in ("paused", "blocked", "complete"):
        assert goal_instruction(msgspec.structs.replace(GOAL, status=status)) is None
    text = goal_instruction(GOAL)
    assert text is not None and text.startswith("<thread_goal>\nObjective: Ship it\n")
    assert "outlives the current turn" in text
    assert "Weak, indirect or missing evidence means it is not done" in text
    assert "persisted for 3 goal turns" in text
    assert "Token budget: 1000 tokens in total." in text
    assert "spent" not in text


def test_the_instruction_states_the_budget_never_the_usage() -> None:
    used = msgspec.structs.replace(GOAL, tokens_used=400, time_used_ms=9_000)
    assert goal_instruction(used) == goal_instruction(GOAL)
    spent = msgspec.structs.replace(GOAL, tokens_used=1_000)
    text = goal_instruction(spent)
    assert text is not None and "The token budget is spent: start no new work." in text
    assert "1,000" not in text and "400" not in text


def test_replay_shows_what_the_goal_used() -> None:
    log = LogBuilder(tick_ms=10)
    log.create(goal=GOAL)
    _goal_turn(log, 5_000, 900, 100)
    lines = render_transcript(replay(log.events))
    assert "goal (active): Ship it · 5s · 1,000 tokens of 1,000 (budget spent)" in lines
