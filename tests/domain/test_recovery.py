"""The round-outcome decision tree (SPEC §7): each branch, and its order."""

from __future__ import annotations

import pytest

from kun.domain.recovery import (
    Continue,
    Decision,
    Fail,
    FinalAnswer,
    RecoveryState,
    ResolveSoftRequired,
    RoundFacts,
    Stop,
    WarnStop,
    decide,
    instruction_for,
    is_progress_report,
    pending_recovery,
    warning_of,
)
from kun.domain.reduce import replay
from kun.domain.repetition import RepetitionSettings
from kun.domain.state import ThreadState
from kun.domain.transcript import render_transcript
from kun.testing.logbuilder import LogBuilder

STATUS = "I will now fix the failing test in parser.py."
_TRUNCATED_MESSAGE = (
    "The answer hit the output limit: raise max output tokens, or ask for smaller steps."
)


def _decide(state: RecoveryState | None = None, **facts: object) -> Decision:
    decision, _ = decide(RoundFacts(**facts), state or RecoveryState())  # type: ignore[arg-type]
    return decision


def _series(facts: list[RoundFacts]) -> list[Decision]:
    state, decisions = RecoveryState(), []
    for fact in facts:
        decision, state = decide(fact, state)
        decisions.append(decision)
    return decisions


def test_a_plain_reply_completes_the_turn() -> None:
    assert _decide(text="Done: 3 files changed.") == Stop()
    assert _decide(text="", stop_reason="content_filter") == Stop()


def test_a_reply_cut_at_the_limit_warns_then_stops() -> None:
    decision = _decide(text="half an ans", stop_reason="length")
    assert isinstance(decision, WarnStop) and decision.code == "output_truncated"
    assert "max output tokens" in decision.message


def test_an_unmet_soft_required_tool_goes_to_the_plan_resolver_or_fails_on_no_text() -> None:
    assert _decide(text="## Plan\n1. x", soft_required_tool="create_plan") == ResolveSoftRequired(
        tool="create_plan"
    )
    failed = _decide(text="  ", soft_required_tool="create_plan")
    assert isinstance(failed, Fail) and failed.code == "required_tool_missing"


def test_an_empty_reply_after_changes_continues_then_final_answer_then_fails() -> None:
    empty = RoundFacts(text="", changed_files=True)
    first, second, third = _series([empty, empty, empty])
    assert isinstance(first, Continue) and first.reason == "empty_post_tool_reply"
    assert first.attempt == 1
    assert isinstance(second, FinalAnswer) and second.attempt == 2
    assert "Tools are now disabled" in second.instruction
    assert isinstance(third, Fail) and third.code == "empty_post_tool_continuation"


def test_an_empty_reply_needs_changed_files_and_stop_reason_stop() -> None:
    assert _decide(text="", changed_files=False) == Stop()
    truncated = _decide(text="", changed_files=True, stop_reason="length")
    assert isinstance(truncated, WarnStop) and truncated.code == "output_truncated"


def test_an_active_goal_recovers_three_repeats_and_stops_on_the_fourth() -> None:
    reply = RoundFacts(text=STATUS, goal_active=True)
    decisions = _series([reply] * 5)
    assert decisions[0] == Stop()
    assert [d.attempt for d in decisions[1:4] if isinstance(d, Continue)] == [1, 2, 3]
    assert all(isinstance(d, Continue) and d.reason == "goal_repetition" for d in decisions[1:4])
    assert isinstance(decisions[4], WarnStop) and decisions[4].code == "goal_repetition_stop"


def test_without_an_active_goal_repeats_are_not_checked() -> None:
    assert _series([RoundFacts(text=STATUS)] * 5) == [Stop()] * 5


def test_the_repetition_thresholds_come_from_the_state() -> None:
    state = RecoveryState.initial(RepetitionSettings(max_repeats=1))
    reply = RoundFacts(text=STATUS, goal_active=True)
    _, state = decide(reply, state)
    first, state = decide(reply, state)
    second, _ = decide(reply, state)
    assert isinstance(first, Continue) and "at most 1" in first.instruction
    assert isinstance(second, WarnStop)


def test_the_repetition_tracker_outlives_the_turn_the_counters_do_not() -> None:
    state = RecoveryState(empty_attempts=2, failure_attempts=1)
    _, state = decide(RoundFacts(text=STATUS, goal_active=True), state)
    fresh = state.for_new_turn()
    assert (fresh.empty_attempts, fresh.failure_attempts) == (0, 0)
    decision, _ = decide(RoundFacts(text=STATUS, goal_active=True), fresh)
    assert isinstance(decision, Continue) and decision.reason == "goal_repetition"


def test_a_progress_report_after_a_failed_tool_recovers_boundedly_then_fails() -> None:
    reply = RoundFacts(text="Let me try that again with the right path.", tool_failed=True)
    first, second, third = _series([reply] * 3)
    assert isinstance(first, Continue) and first.reason == "post_tool_failure"
    assert isinstance(second, Continue) and second.attempt == 2
    assert isinstance(third, Fail) and third.code == "post_tool_failure_stalled"


def test_a_real_answer_after_a_failed_tool_completes() -> None:
    answer = "The file does not exist, so there is nothing to migrate; no change was made."
    assert _decide(text=answer, tool_failed=True) == Stop()


@pytest.mark.parametrize(
    ("text", "report"),
    [
        ("", True),
        ("I'll fix the import next.", True),
        ("Let me check the logs.", True),
        ("接下来我会修改配置文件。", True),
        ("The tests pass and the bug is fixed.", False),
        ("Let me " + "explain at length. " * 60, False),
        ("The file is missing. Let me check the logs:", True),
        ("I'll leave the config alone: the file does not exist. Done.", False),
        ("Fixed the import. Let me know if you need anything else.", False),
        ("...", False),
    ],
)
def test_a_progress_report_announces_instead_of_answering(text: str, report: bool) -> None:
    assert is_progress_report(text) is report


# -- first match wins ---------------------------------------------------------


def test_the_soft_required_tool_comes_before_the_empty_reply() -> None:
    decision = _decide(text="", changed_files=True, soft_required_tool="create_plan")
    assert isinstance(decision, Fail) and decision.code == "required_tool_missing"


def test_the_empty_reply_comes_before_the_goal_and_the_failed_tool() -> None:
    decision = _decide(text="", changed_files=True, goal_active=True, tool_failed=True)
    assert isinstance(decision, Continue) and decision.reason == "empty_post_tool_reply"


def test_the_goal_repetition_comes_before_the_failed_tool() -> None:
    reply = RoundFacts(text=STATUS, goal_active=True, tool_failed=True)
    first, second = _series([reply, reply])
    assert isinstance(first, Continue) and first.reason == "post_tool_failure"
    assert isinstance(second, Continue) and second.reason == "goal_repetition"


def test_the_failed_tool_comes_before_the_truncation() -> None:
    decision = _decide(text="I'll retry with", stop_reason="length", tool_failed=True)
    assert isinstance(decision, Continue) and decision.reason == "post_tool_failure"


def test_a_truncated_reply_under_a_goal_is_not_a_repeat_but_a_truncation() -> None:
    reply = RoundFacts(text=STATUS, goal_active=True, stop_reason="length")
    assert all(
        isinstance(d, WarnStop) and d.code == "output_truncated" for d in _series([reply] * 5)
    )


def test_a_recorded_decision_rebuilds_its_instruction() -> None:
    settings = RepetitionSettings()
    replies = [
        RoundFacts(text="", changed_files=True),
        RoundFacts(text="I'll retry.", tool_failed=True),
        RoundFacts(text=STATUS, goal_active=True),
    ]
    steered = [
        d for r in replies for d in _series([r] * 3) if isinstance(d, Continue | FinalAnswer)
    ]
    assert len(steered) == 6
    for decision in steered:
        rebuilt = instruction_for(decision.reason, decision.attempt, settings)
        assert rebuilt == decision.instruction
    with pytest.raises(ValueError, match="soft_required_tool"):
        instruction_for("soft_required_tool", 1, settings)


# -- recorded as warnings, rebuilt from the log ------------------------------


def _recorded(decision: Decision) -> ThreadState:
    log = LogBuilder()
    log.create(workspace="/w")
    log.start_turn("fix it")
    log.run_tool("edit_file", {"path": "a.py"}, "ok")
    log.assistant_text([""])
    recorded = warning_of(decision)
    assert recorded is not None
    log.warning(*recorded)
    return replay(log.events)


def test_an_empty_reply_decision_is_a_warning_the_next_request_rebuilds() -> None:
    empty = RoundFacts(text="", changed_files=True)
    first, second, _ = _series([empty] * 3)
    state = _recorded(first)
    pending = pending_recovery(state.turns[-1].items)
    assert isinstance(first, Continue) and pending is not None
    assert (pending.instruction, pending.tools_off) == (first.instruction, False)
    final = pending_recovery(_recorded(second).turns[-1].items)
    assert isinstance(second, FinalAnswer) and final is not None
    assert (final.code, final.instruction, final.tools_off) == (
        "empty_post_tool_final_answer",
        second.instruction,
        True,
    )
    shown = "\n".join(render_transcript(state))
    assert "warning empty_post_tool_reply: [kun] Your last reply was empty" in shown


def test_a_recovery_applies_to_one_request_only() -> None:
    decision, _ = decide(RoundFacts(text="", changed_files=True), RecoveryState())
    log = LogBuilder()
    log.create(workspace="/w")
    log.start_turn("fix it")
    recorded = warning_of(decision)
    assert recorded is not None
    log.warning(*recorded)
    log.assistant_text(["Changed a.py; tests pass."])
    assert pending_recovery(replay(log.events).turns[-1].items) is None
    log.warning("output_truncated", "cut")
    assert pending_recovery(replay(log.events).turns[-1].items) is None
    assert pending_recovery(()) is None


def test_only_going_on_and_warning_decisions_are_warnings() -> None:
    truncated = _decide(text="half", stop_reason="length")
    assert warning_of(truncated) == ("output_truncated", _TRUNCATED_MESSAGE)
    assert warning_of(Stop()) is None
    assert warning_of(Fail(code="required_tool_missing", message="x")) is None
    assert warning_of(ResolveSoftRequired(tool="create_plan")) is None
