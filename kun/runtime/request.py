"""The request of a step (SPEC §8.3): the turn's recorded context, the
visible history (from the latest applicable compaction), and the notes
that follow the history — never before it, so the leading bytes stay the
same from step to step and the provider's prefix cache holds."""

from __future__ import annotations

from kun.contracts.model import ModelRequest
from kun.domain.compaction import visible_history
from kun.domain.goals import goal_instruction, keep_goal_tools
from kun.domain.recovery import PendingRecovery, pending_recovery
from kun.domain.state import ThreadState
from kun.domain.verification import VERIFICATION_SUGGESTION, needs_verification
from kun.runtime.context import TurnRun
from kun.runtime.plan import plan_note, step_tools
from kun.runtime.project import render_project_context

__all__ = ["NO_DIALOG", "build_request"]

NO_DIALOG = (
    "This turn runs unattended: nobody can answer questions. Do not promise a dialog "
    "or ask the user to choose; decide, act, and report what you did."
)


def build_request(run: TurnRun, state: ThreadState) -> ModelRequest:
    """The request of the next step. Everything but the history and the
    notes comes from the turn's recorded context when it has one, so the
    log holds what was sent and every step sends the same leading bytes.
    Under an active goal the goal note comes first among the notes, and
    the goal and todo tools survive whatever narrowed the tool set (not a
    step a recovery sends without tools: that one must answer)."""
    history = list(visible_history(state.turns))
    if run.side_files is not None:
        history = run.side_files.resolve(history)
    notes = []
    if run.disable_user_input:
        notes.append(NO_DIALOG)
    goal = goal_instruction(state.settings.goal)
    if goal is not None:
        notes.append(goal)
    todos = state.settings.todos
    if todos:
        rows = "\n".join(f"- [{t.status}] {t.content}" for t in todos)
        notes.append(f"<thread_todos>\n{rows}\n</thread_todos>")
    if needs_verification(history):
        notes.append(VERIFICATION_SUGGESTION)
    plan = plan_note(run, state)
    if plan is not None:
        notes.append(plan)
    tools = keep_goal_tools(step_tools(run, state), run.tool_specs, state.settings.goal)
    pending = _pending(run, state)
    if pending is not None:
        notes.append(pending.instruction)
        if pending.tools_off:
            tools = ()
    context = run.context
    return ModelRequest(
        system_prompt=context.system_prompt if context is not None else run.system_prompt,
        project_context=render_project_context(context) if context is not None else None,
        history=tuple(history),
        context_instructions="\n\n".join(notes) or None,
        tools=tools,
        reasoning_effort=context.reasoning_effort if context is not None else run.reasoning_effort,
    )


def _pending(run: TurnRun, state: ThreadState) -> PendingRecovery | None:
    """The recovery instruction a recorded round decision asks this step to
    send (last among the notes, so the leading bytes stay the same)."""
    turn = next((t for t in state.turns if t.turn_id == run.turn_id), None)
    return pending_recovery(turn.items) if turn is not None else None
