"""The pure goal-resume policy (SPEC §7.4): every branch of the decision
after a turn, the backoff table, and the attempt count derived from the log."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kun.contracts.items import Item, ToolResult, UserMessage, WarningItem
from kun.contracts.threads import Goal, ThreadSettings
from kun.domain.resume_policy import (
    RUNAWAY_BLOCK_CODE,
    RUNAWAY_CODES,
    Block,
    NoResume,
    ResumeSettings,
    Schedule,
    attempts_without_progress,
    backoff_seconds,
    decide_after_turn,
    made_progress,
    still_resumable,
)
from kun.domain.state import ThreadState, TurnError, TurnState

GOAL = Goal(objective="ship it", created_at=100)
SETTINGS = ResumeSettings()


def turn(
    n: int,
    *items: Item,
    resume: int = 0,
    status: str = "completed",
    plan_mode: bool = False,
    started_at: int = 200,
) -> TurnState:
    message = UserMessage(id=f"m{n}", text="go", goal_resume=resume)
    return TurnState(
        turn_id=f"turn_{n}",
        status=status,  # type: ignore[arg-type]
        started_seq=n,
        started_at=started_at,
        plan_mode=plan_mode,
        items=(message, *items),
    )


def state(*turns: TurnState, goal: Goal | None = GOAL) -> ThreadState:
    return ThreadState(thread_id="thr", settings=ThreadSettings(goal=goal), turns=turns)


def result(name: str, *, is_error: bool = False) -> ToolResult:
    return ToolResult(id=f"r-{name}", call_id=f"c-{name}", name=name, is_error=is_error)


def decide(s: ThreadState, *, aborted: bool = False) -> object:
    return decide_after_turn(s, s.turns[-1], aborted=aborted)


@pytest.mark.parametrize(
    ("attempt", "seconds"),
    [(1, 2), (2, 4), (3, 8), (4, 16), (5, 32), (6, 60), (7, 60), (1000, 60)],
)
def test_backoff_table(attempt: int, seconds: float) -> None:
    assert backoff_seconds(attempt, SETTINGS) == seconds


@given(st.integers(min_value=1, max_value=10_000))
def test_backoff_never_exceeds_the_cap_and_never_shrinks(attempt: int) -> None:
    here = backoff_seconds(attempt, SETTINGS)
    assert 2 <= here <= 60
    assert backoff_seconds(attempt + 1, SETTINGS) >= here


def test_a_user_turn_schedules_the_first_attempt() -> None:
    decision = decide(state(turn(1)))
    assert decision == Schedule(
        key=("thr", 100, "ship it"), attempt=1, delay_seconds=2, disable_user_input=False
    )


def test_resumed_turns_without_progress_count_up_then_block() -> None:
    turns = [turn(1)]
    for attempt in range(1, 6):
        decision = decide(state(*turns))
        assert isinstance(decision, Schedule) and decision.attempt == attempt
        turns.append(turn(attempt + 1, resume=attempt))
    decision = decide(state(*turns))
    assert isinstance(decision, Block)
    assert decision.goal == msgspec.structs.replace(GOAL, status="blocked")
    assert "5 resumed turns" in decision.message
    one = decide_after_turn(
        state(turn(1), turn(2, resume=1)), turn(2, resume=1), aborted=False,
        settings=ResumeSettings(max_attempts=1),
    )  # fmt: skip
    assert isinstance(one, Block) and "1 resumed turn in a row" in one.message


def test_progress_resets_the_count() -> None:
    s = state(turn(1), turn(2, resume=1), turn(3, resume=2), turn(4, result("bash"), resume=3))
    assert attempts_without_progress(s, GOAL) == 0
    s = state(*s.turns, turn(5, resume=1))
    assert attempts_without_progress(s, GOAL) == 1


def test_goal_tools_and_failed_calls_are_not_progress() -> None:
    assert not made_progress(turn(1, result("get_goal"), result("update_goal")))
    assert not made_progress(turn(1, result("bash", is_error=True)))
    assert made_progress(turn(1, result("read_file")))


def test_a_user_turn_ends_the_count() -> None:
    s = state(turn(1, resume=1), turn(2, resume=2), turn(3), turn(4, resume=1))
    assert attempts_without_progress(s, GOAL) == 1


def test_turns_before_the_goal_do_not_count() -> None:
    s = state(turn(1, resume=4, started_at=50), turn(2, resume=1))
    assert attempts_without_progress(s, GOAL) == 1


@pytest.mark.parametrize("status", ["paused", "blocked", "complete"])
def test_an_inactive_goal_clears(status: str) -> None:
    goal = msgspec.structs.replace(GOAL, status=status)
    assert decide(state(turn(1), goal=goal)) == NoResume(reason="no_active_goal", clear=True)
    assert decide(state(turn(1), goal=None)) == NoResume(reason="no_active_goal", clear=True)


def test_an_aborted_turn_is_not_resumed() -> None:
    assert decide(state(turn(1)), aborted=True) == NoResume(reason="aborted")
    assert decide(state(turn(1, status="aborted"))) == NoResume(reason="aborted")


def test_a_failed_turn_is_resumed() -> None:
    assert isinstance(decide(state(turn(1, status="failed"))), Schedule)


@pytest.mark.parametrize("code", sorted(RUNAWAY_CODES))
def test_a_runaway_stop_blocks_the_goal_even_after_successful_calls(code: str) -> None:
    """The storm breaker stops a model repeating a call that succeeds: those
    calls are not progress a resume could build on, and a resumed turn would
    spend its whole limit again."""
    stopped = msgspec.structs.replace(
        turn(1, result("read_file"), status="failed"),
        error=TurnError(code=code, message="stopped"),
    )
    decision = decide(state(stopped))
    assert isinstance(decision, Block)
    assert decision.code == RUNAWAY_BLOCK_CODE and code in decision.message
    assert decision.goal.status == "blocked"
    other = msgspec.structs.replace(stopped, error=TurnError(code="provider_error", message="x"))
    assert isinstance(decide(state(other)), Schedule)


def test_a_plan_mode_turn_is_not_resumed() -> None:
    assert decide(state(turn(1, plan_mode=True))) == NoResume(reason="plan_mode")


def test_an_exhausted_budget_is_not_resumed() -> None:
    spent = msgspec.structs.replace(GOAL, token_budget=1000, tokens_used=1000)
    assert decide(state(turn(1), goal=spent)) == NoResume(reason="budget_exhausted")
    left = msgspec.structs.replace(GOAL, token_budget=1000, tokens_used=999)
    assert isinstance(decide(state(turn(1), goal=left)), Schedule)


def test_a_repetition_stop_suppresses_unless_the_turn_made_progress() -> None:
    stop = WarningItem(id="w", code="goal_repetition_stop", message="repeating")
    assert decide(state(turn(1, stop))) == NoResume(reason="repetition")
    assert isinstance(decide(state(turn(1, result("bash"), stop))), Schedule)
    assert isinstance(decide(state(turn(1, result("get_goal"), stop))), NoResume)


def test_the_scheduling_turn_passes_on_disable_user_input() -> None:
    unattended = msgspec.structs.replace(turn(1), disable_user_input=True)
    decision = decide(state(unattended))
    assert isinstance(decision, Schedule) and decision.disable_user_input


def test_the_timer_rechecks_the_goal_key_status_and_idleness() -> None:
    key = ("thr", 100, "ship it")
    assert still_resumable(state(turn(1)), key)
    assert not still_resumable(state(turn(1), goal=Goal(objective="ship it", created_at=101)), key)
    assert not still_resumable(state(turn(1), goal=Goal(objective="other", created_at=100)), key)
    paused = msgspec.structs.replace(GOAL, status="paused")
    assert not still_resumable(state(turn(1), goal=paused), key)
    assert not still_resumable(state(turn(1), turn(2, status="running")), key)
