"""Where a goal's resume stands, read from the resumer of the process that
runs the thread's turns (:mod:`kun.runtime.resume`): the in-process side
of :meth:`kun.app.interface.Kun.goal_resume`."""

from __future__ import annotations

from typing import Literal

from kun.app.answers import GoalResume
from kun.runtime.service import TurnService

__all__ = ["goal_resume"]


def goal_resume(service: TurnService, thread_id: str, after_turn: str) -> GoalResume:
    """What settling ``after_turn`` scheduled (:class:`GoalResume`)."""
    resumes = service.resumes
    pending = resumes.scheduled_after(thread_id, after_turn)
    if pending is None:
        return GoalResume(thread_id=thread_id, after_turn=after_turn, state="none")
    state: Literal["waiting", "started", "dropped"] = "waiting"
    if pending.settled.is_set():
        state = "started" if pending.turn_id is not None else "dropped"
    return GoalResume(
        thread_id=thread_id,
        after_turn=after_turn,
        state=state,
        delay_seconds=pending.plan.delay_seconds,
        attempt=pending.plan.attempt,
        max_attempts=resumes.settings.max_attempts,
        turn_id=pending.turn_id,
    )
