"""What the live surfaces (``kun run`` and the interactive session) need
beside :class:`~kun.app.interface.Kun`: pure helpers over the contract
types, re-exported here so :mod:`kun.cli` and :mod:`kun.chat` reach no
lower layer.

Each one reads only what either adapter hands out (an event, a thread's
projection, an answer), so it says the same whichever adapter ran:

* :class:`LiveText`: how a follower with previews shows each streamed
  character once (the rule of :mod:`kun.runtime.bus`);
* :func:`event_line`: an event as the log writes it (``kun run --json``);
* :func:`resolve_home`: the home a prompt history is kept in;
* :func:`check_prompt`: a prompt refused before a thread is made for it;
* :func:`waits_for_answer`: the thread's open turn only waits for the user
  (a signal then leaves it waiting: durable suspension);
* :func:`superseded`: an answer or interrupt that came too late (another
  client answered, the turn ended), from either adapter;
* :func:`reachable`: a turn run here is steered from another terminal;
* the wording of a restore, a goal, a plan, a compaction summary and the
  rule an "always" adds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from kun.app.interface import Kun
from kun.app.refusals import Refused
from kun.config import Config
from kun.contracts.events import Event
from kun.domain.compaction import text_tokens
from kun.domain.goals import describe_goal
from kun.domain.plan_mode import MATERIALIZED_SUMMARY, plan_context
from kun.domain.resume_policy import BLOCK_CODES
from kun.domain.state import ThreadState
from kun.domain.suspension import find_suspension
from kun.runtime.bus import LiveText
from kun.runtime.checkpoints import describe_restore
from kun.runtime.errors import AnswerConflict, SteeringFull, TurnNotRunning, WorkspaceMissing
from kun.runtime.turn_input import check_prompt
from kun.store.codec import encode_line
from kun.store.paths import resolve_home
from kun.tools.allow import describe as describe_rule
from kun.tools.allow import rule_for

__all__ = [
    "BLOCK_CODES",
    "MATERIALIZED_SUMMARY",
    "LiveText",
    "WorkspaceMissing",
    "check_prompt",
    "describe_goal",
    "describe_restore",
    "describe_rule",
    "event_line",
    "plan_context",
    "reachable",
    "resolve_home",
    "retry_attempts",
    "rule_for",
    "steered_too_late",
    "superseded",
    "text_tokens",
    "waits_for_answer",
]

CONFLICT = 409


def event_line(event: Event) -> bytes:
    """The event as one line of ``events.jsonl`` (newline included)."""
    return encode_line(event)


def waits_for_answer(state: ThreadState) -> bool:
    """Whether the thread's open turn only waits for an approval or an
    answer (:mod:`kun.domain.suspension`): stopping then leaves it waiting."""
    turn = state.running_turn
    return turn is not None and find_suspension(state, turn) is not None


def superseded(exc: BaseException) -> bool:
    """An answer or an interrupt refused because it is moot: the approval or
    question was answered already (by another client), or the turn has
    ended. The in-process adapter says so with the runtime's error, the
    HTTP one with a 409."""
    if isinstance(exc, AnswerConflict | TurnNotRunning):
        return True
    return isinstance(exc, Refused) and exc.status == CONFLICT


def steered_too_late(exc: BaseException) -> bool:
    """Steering refused because the turn has ended (or taken its last
    step): its text becomes the next message. A full queue is not that."""
    if isinstance(exc, SteeringFull):
        return exc.settled
    if isinstance(exc, Refused):
        return exc.status == CONFLICT and exc.code != "steering_full"
    return isinstance(exc, TurnNotRunning)


def retry_attempts(config: Config | None, provider: str | None) -> int:
    """How many sends the provider's retry policy allows (its
    ``retry.max_attempts`` in ``config``, else kun's default)."""
    from kun.model.retry import RetryPolicy

    settings = config.providers.get(provider) if config and provider else None
    configured = settings.retry.max_attempts if settings is not None else None
    return configured or RetryPolicy().max_attempts


@asynccontextmanager
async def reachable(kun: Kun, thread_id: str) -> AsyncIterator[None]:
    """While the block runs, ``kun steer`` and ``kun interrupt`` from another
    terminal reach the thread's turns this process runs (its control socket,
    :mod:`kun.runtime.control_channel`). Over a server they go to the server
    instead: nothing to open here."""
    from kun.app.local import LocalKun

    if not isinstance(kun, LocalKun):
        yield
        return
    from kun.runtime.control_channel import serve_control

    async with serve_control(kun.service, thread_id):
        yield
