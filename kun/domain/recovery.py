"""The round-outcome decision tree (SPEC §7): what the loop does with a model
reply that called no tools.

Real models stop early: "OK, I'll fix it now" and nothing happens, an empty
reply after editing files, the same status report again and again, output cut
at the token limit. Ending the turn as ``completed`` on each of these hides
the failure, so :func:`decide` walks SPEC §7's branches, first match wins:

1. a soft-required tool is unmet (plan mode's ``create_plan``, SPEC §7.5)
   -> a clarifying question stops for the user's answer
   (:func:`kun.domain.plan_mode.is_clarifying_question`), other text is
   materialised into the tool's call (:class:`ResolveSoftRequired`), no text
   fails ``required_tool_missing``;
2. the turn changed files and the reply is empty (stop reason ``stop``) ->
   a continuation instruction, then final-answer mode (tools off), then fail
   ``empty_post_tool_continuation``;
3. an active goal (stop reason ``stop``) -> repetition check (SPEC §7.2):
   repeats 1-3 get a recovery instruction, the 4th stops with the warning
   ``goal_repetition_stop``; a reply that is no repeat falls through;
4. a tool failed and the reply is only a progress report (or nothing) ->
   a bounded recovery instruction, then fail ``post_tool_failure_stalled``;
5. stop reason ``length`` -> the warning ``output_truncated``, then stop;
6. otherwise stop: the turn completed.

Pure: :class:`RoundFacts` (what the step produced) and :class:`RecoveryState`
(the counters carried across the rounds of a turn, the repetition tracker
across a goal's turns) in, a :class:`Decision` and the next state out. Every
decision carries a reason code for the log, so a replay shows why the loop
continued, stopped or failed.

How a decision is recorded needs no new event kind: a decision that goes on
(:class:`Continue`, :class:`FinalAnswer`) or warns is a ``warning`` event
(:func:`warning_of`: the reason code, and as message the very instruction
sent), which the reducer makes a ``warning`` item of the turn, so ``kun
replay`` shows it and the request of the next step is rebuilt from the log:
while such an item is the running turn's last, :func:`pending_recovery`
gives the instruction to send after the history and whether tools are off.
A failure is the turn's ``turn_failed`` code; a stop, ``turn_completed``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import msgspec

from kun.contracts.items import Item, WarningItem
from kun.domain.plan_mode import is_clarifying_question
from kun.domain.repetition import RepetitionSettings, RepetitionTracker, recovery_instruction

__all__ = [
    "EMPTY_REPLY_MAX_RECOVERIES",
    "FINAL_ANSWER_CODE",
    "POST_FAILURE_MAX_RECOVERIES",
    "RECOVERY_CODES",
    "Continue",
    "Decision",
    "Fail",
    "FinalAnswer",
    "PendingRecovery",
    "RecoveryState",
    "ResolveSoftRequired",
    "RoundFacts",
    "Stop",
    "WarnStop",
    "decide",
    "instruction_for",
    "is_progress_report",
    "pending_recovery",
    "warning_of",
]

EMPTY_REPLY_MAX_RECOVERIES = 2
"""Attempt 1 continues with an instruction, attempt 2 is final-answer mode."""
POST_FAILURE_MAX_RECOVERIES = 2
"""Recovery instructions after a failed tool before the turn fails."""
FINAL_ANSWER_CODE = "empty_post_tool_final_answer"
"""The warning code of a :class:`FinalAnswer`: the next step runs without tools."""
RECOVERY_CODES = frozenset(
    {"empty_post_tool_reply", FINAL_ANSWER_CODE, "goal_repetition", "post_tool_failure"}
)
"""The warning codes whose message is an instruction for the next request."""

ReasonCode = Literal[
    "soft_required_tool",
    "empty_post_tool_reply",
    "goal_repetition",
    "post_tool_failure",
]


class RoundFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What one model step produced, and what the turn did before it.

    ``text``: the reply's visible text. ``stop_reason``: as recorded
    (:data:`kun.contracts.model.StopReason`). ``soft_required_tool``: the
    name of a tool the turn expects but that was not called yet (plan
    mode's ``create_plan``), else ``None``. ``changed_files``: a tool of this
    turn changed files (a plan's artefacts excepted). ``goal_active``: the
    thread's goal is active. ``tool_failed``: a tool call of this turn failed
    and none has succeeded since."""

    text: str = ""
    stop_reason: str = "stop"
    soft_required_tool: str | None = None
    changed_files: bool = False
    goal_active: bool = False
    tool_failed: bool = False


class RecoveryState(msgspec.Struct, frozen=True, kw_only=True):
    """The counters :func:`decide` carries between rounds. The attempt
    counts belong to one turn (start each turn with
    :meth:`for_new_turn`); the repetition tracker belongs to the goal, so a
    status repeated across resumed goal turns is still caught."""

    empty_attempts: int = 0
    failure_attempts: int = 0
    repetition: RepetitionTracker = RepetitionTracker()

    @classmethod
    def initial(cls, settings: RepetitionSettings | None = None) -> RecoveryState:
        return cls(repetition=RepetitionTracker(settings=settings or RepetitionSettings()))

    def for_new_turn(self) -> RecoveryState:
        """The same goal's tracker, the turn's counters reset."""
        return RecoveryState(repetition=self.repetition)


class Continue(msgspec.Struct, frozen=True, kw_only=True, tag="continue"):
    """Send ``instruction`` with the next request and run another step."""

    reason: ReasonCode
    attempt: int
    instruction: str


class FinalAnswer(msgspec.Struct, frozen=True, kw_only=True, tag="final_answer"):
    """Run one more step with tools disabled and ``instruction`` sent: the
    model must answer from the tool results it has."""

    reason: ReasonCode
    attempt: int
    instruction: str


class ResolveSoftRequired(msgspec.Struct, frozen=True, kw_only=True, tag="soft_required"):
    """The soft-required ``tool`` was not called but the reply has text that
    is no clarifying question: the loop materialises the text into a
    synthetic call of ``tool`` (SPEC §7.5), recorded like any call."""

    tool: str
    reason: ReasonCode = "soft_required_tool"


class Stop(msgspec.Struct, frozen=True, kw_only=True, tag="stop"):
    """The turn completed."""

    reason: Literal["stop"] = "stop"


class WarnStop(msgspec.Struct, frozen=True, kw_only=True, tag="warn_stop"):
    """Record a warning ``code`` with ``message``, then complete the turn."""

    code: Literal["output_truncated", "goal_repetition_stop"]
    message: str


class Fail(msgspec.Struct, frozen=True, kw_only=True, tag="fail"):
    """Fail the turn with ``code``."""

    code: Literal[
        "required_tool_missing", "empty_post_tool_continuation", "post_tool_failure_stalled"
    ]
    message: str


Decision = Continue | FinalAnswer | ResolveSoftRequired | Stop | WarnStop | Fail

_TRUNCATED = "The answer hit the output limit: raise max output tokens, or ask for smaller steps."


def instruction_for(reason: ReasonCode, attempt: int, settings: RepetitionSettings) -> str:
    """The instruction a ``Continue``/``FinalAnswer`` of ``reason`` and
    ``attempt`` sends; a recorded decision is enough to rebuild it."""
    if reason == "empty_post_tool_reply":
        return _EMPTY_FINAL if attempt >= EMPTY_REPLY_MAX_RECOVERIES else _EMPTY_CONTINUE
    if reason == "goal_repetition":
        return recovery_instruction(attempt, settings.max_repeats)
    if reason == "post_tool_failure":
        return _POST_FAILURE
    raise ValueError(f"no instruction for {reason!r}")


_EMPTY_CONTINUE = (
    "[kun] Your last reply was empty, after this turn changed files. Continue the task: "
    "call the next tool you need, or, if the work is done, say what you changed and how "
    "you checked it."
)
_EMPTY_FINAL = (
    "[kun] Your reply was empty again. Tools are now disabled. Give your final answer "
    "now, from the tool results above: what you changed, what you checked, and what is "
    "left. An empty reply fails the turn."
)
_POST_FAILURE = (
    "[kun] A tool call failed and your reply only announced what comes next. Do it now: "
    "read the error above, fix the arguments or take another approach, and call a tool; "
    "if you cannot go on, say plainly what failed and why."
)

_PROGRESS_CUES = re.compile(
    r"\b(i'll|i will|i'm going to|i am going to|let me(?! know)|let's|next,? i|now i|i need to)\b"
    r"|我将|我会|我这就|让我|接下来|下一步|现在我|我来",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|[。!?\n]+")
_PROGRESS_REPORT_MAX_CHARS = 600


def is_progress_report(text: str) -> bool:
    """Whether ``text`` only reports progress: nothing, or a short text whose
    last sentence announces what the model is about to do (English and
    Chinese cues) instead of doing it. Only the last sentence counts, so an
    answer that mentions a plan and then concludes is not one; "let me know"
    is a closing courtesy, not a plan."""
    stripped = text.strip()
    if not stripped:
        return True
    if len(stripped) > _PROGRESS_REPORT_MAX_CHARS:
        return False
    sentences = [s for s in _SENTENCE_END.split(stripped) if s.strip()]
    return bool(sentences) and bool(_PROGRESS_CUES.search(sentences[-1]))


def decide(facts: RoundFacts, state: RecoveryState) -> tuple[Decision, RecoveryState]:
    """SPEC §7's decision for a reply without tool calls, first match wins,
    and the state for the next round."""
    empty = not facts.text.strip()
    if facts.soft_required_tool is not None:
        if empty:
            message = f"the model ended without calling {facts.soft_required_tool}"
            return Fail(code="required_tool_missing", message=message), state
        if is_clarifying_question(facts.text):
            return Stop(), state
        return ResolveSoftRequired(tool=facts.soft_required_tool), state
    if facts.changed_files and empty and facts.stop_reason == "stop":
        return _empty_reply(state)
    if facts.goal_active and facts.stop_reason == "stop":
        decision, state = _repetition(facts.text, state)
        if decision is not None:
            return decision, state
    if facts.tool_failed and is_progress_report(facts.text):
        return _post_failure(state)
    if facts.stop_reason == "length":
        return WarnStop(code="output_truncated", message=_TRUNCATED), state
    return Stop(), state


def _empty_reply(state: RecoveryState) -> tuple[Decision, RecoveryState]:
    attempt = state.empty_attempts + 1
    if attempt > EMPTY_REPLY_MAX_RECOVERIES:
        message = (
            f"the model replied empty {attempt} times after changing files "
            "(the last time with tools disabled)"
        )
        return Fail(code="empty_post_tool_continuation", message=message), state
    after = msgspec.structs.replace(state, empty_attempts=attempt)
    settings = state.repetition.settings
    instruction = instruction_for("empty_post_tool_reply", attempt, settings)
    if attempt == EMPTY_REPLY_MAX_RECOVERIES:
        return FinalAnswer(
            reason="empty_post_tool_reply", attempt=attempt, instruction=instruction
        ), after
    return Continue(reason="empty_post_tool_reply", attempt=attempt, instruction=instruction), after


def _repetition(text: str, state: RecoveryState) -> tuple[Decision | None, RecoveryState]:
    tracker, verdict = state.repetition.observe(text)
    after = msgspec.structs.replace(state, repetition=tracker)
    if verdict.action == "none":
        return None, after
    if verdict.action == "stop":
        message = (
            f"The model repeated the same reply {verdict.repeats} times in a row under an "
            "active goal; the turn was stopped."
        )
        return WarnStop(code="goal_repetition_stop", message=message), after
    decision = Continue(
        reason="goal_repetition", attempt=verdict.repeats, instruction=verdict.instruction
    )
    return decision, after


def _post_failure(state: RecoveryState) -> tuple[Decision, RecoveryState]:
    attempt = state.failure_attempts + 1
    if attempt > POST_FAILURE_MAX_RECOVERIES:
        message = (
            f"after a failed tool call the model only reported progress {attempt} times "
            "without acting"
        )
        return Fail(code="post_tool_failure_stalled", message=message), state
    after = msgspec.structs.replace(state, failure_attempts=attempt)
    settings = state.repetition.settings
    instruction = instruction_for("post_tool_failure", attempt, settings)
    return Continue(reason="post_tool_failure", attempt=attempt, instruction=instruction), after


def warning_of(decision: Decision) -> tuple[str, str] | None:
    """The ``(code, message)`` of the ``warning`` event the loop records for
    ``decision`` before acting on it; ``None`` when the turn's own end
    (``turn_completed``, ``turn_failed``) says it all."""
    if isinstance(decision, Continue):
        return decision.reason, decision.instruction
    if isinstance(decision, FinalAnswer):
        return FINAL_ANSWER_CODE, decision.instruction
    if isinstance(decision, WarnStop):
        return decision.code, decision.message
    return None


class PendingRecovery(msgspec.Struct, frozen=True, kw_only=True):
    """What the next request carries because of a recorded decision."""

    code: str
    instruction: str
    tools_off: bool


def pending_recovery(turn_items: Sequence[Item]) -> PendingRecovery | None:
    """The recovery the next step of the running turn must apply: its last
    item is a recovery warning (the model has not answered it yet)."""
    if not turn_items:
        return None
    last = turn_items[-1]
    if not isinstance(last, WarningItem) or last.code not in RECOVERY_CODES:
        return None
    tools_off = last.code == FINAL_ANSWER_CODE
    return PendingRecovery(code=last.code, instruction=last.message, tools_off=tools_off)
