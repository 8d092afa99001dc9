"""A model that loops is stopped by default (issue 19, item 3): the storm
breaker ends a turn whose calls it keeps refusing, and every turn has a
step and a token limit unless the user raises them."""

from __future__ import annotations

from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import anyio
import pytest

from kun.contracts.items import ToolResult
from kun.contracts.model import (
    CompletedChunk,
    ModelRequest,
    ModelStreamChunk,
    TextDeltaChunk,
    UsageChunk,
)
from kun.contracts.usage import UsageSnapshot
from kun.model.scripted import text_reply, tool_reply
from kun.runtime.context import DEFAULT_MAX_STEPS, TurnLimits
from kun.runtime.storm import STOP_AFTER
from tests.runtime.support import harness

pytestmark = pytest.mark.anyio

A_FEW_DOZEN = 24


def forever(*calls: tuple[str, dict[str, Any]]) -> Callable[[ModelRequest], list[ModelStreamChunk]]:
    """A model that answers every request with the next of ``calls``, in a
    cycle, each with a new call id: it never stops by itself."""
    ids = count()

    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        n = next(ids)
        name, arguments = calls[n % len(calls)]
        return tool_reply(name, arguments, call_id=f"c{n}")

    return respond


def _codes(turn: object) -> list[str | None]:
    return [i.code for i in turn.items if isinstance(i, ToolResult)]  # type: ignore[attr-defined]


async def test_a_model_repeating_one_call_forever_is_stopped_by_default(tmp_path: Path) -> None:
    async with harness(tmp_path, forever(("read_file", {"path": "a.py"}))) as h:
        turn = await h.run("read a.py")
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.code == "tool_storm_stopped"
    assert len(h.model.requests) <= A_FEW_DOZEN
    assert _codes(turn)[-STOP_AFTER:] == ["tool_storm_suppressed"] * STOP_AFTER
    assert f"{STOP_AFTER} calls in a row were not run" in turn.error.message
    assert "read_file" in turn.error.message


async def test_a_model_alternating_two_refused_calls_is_stopped(tmp_path: Path) -> None:
    model = forever(("read_file", {"path": "a.py"}), ("read_file", {"path": "b.py"}))
    async with harness(tmp_path, model) as h:
        turn = await h.run("read both")
    assert turn.error is not None and turn.error.code == "tool_storm_stopped"
    assert len(h.model.requests) <= A_FEW_DOZEN


async def test_a_call_that_runs_between_refusals_lets_the_turn_go_on(tmp_path: Path) -> None:
    a = ("read_file", {"path": "a.py"})
    b = ("read_file", {"path": "b.py"})
    script = [
        tool_reply(*a, call_id="c1"),
        tool_reply(*a, call_id="c2"),
        tool_reply(*a, call_id="c3"),
        tool_reply(*b, call_id="c4"),
        tool_reply(*a, call_id="c5"),
        tool_reply(*a, call_id="c6"),
        text_reply("a.py prints a"),
    ]
    async with harness(tmp_path, script) as h:
        turn = await h.run("read a.py")
    assert turn.status == "completed"
    refused = "tool_storm_suppressed"
    assert _codes(turn) == [None, None, refused, None, refused, refused]


async def test_a_model_repeating_a_call_plan_mode_refuses_is_stopped(tmp_path: Path) -> None:
    async with harness(tmp_path, forever(("bash", {"command": "ls"}))) as h:
        turn_id = await h.service.start_turn(h.thread_id, "plan it", plan_mode=True)
        with anyio.fail_after(10):
            turn = await h.service.wait_turn(h.thread_id, turn_id)
    assert turn.error is not None and turn.error.code == "tool_storm_stopped"
    assert _codes(turn)[:2] == ["not_allowed_in_plan_mode"] * 2
    assert len(h.model.requests) <= A_FEW_DOZEN


async def test_a_model_calling_different_failing_tools_forever_hits_the_default_step_limit(
    tmp_path: Path,
) -> None:
    ids = count()

    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        n = next(ids)
        return tool_reply("read_file", {"path": f"missing-{n}.py"}, call_id=f"c{n}")

    async with harness(tmp_path, respond) as h:
        turn_id = await h.service.start_turn(h.thread_id, "find it")
        with anyio.fail_after(60):
            turn = await h.service.wait_turn(h.thread_id, turn_id)
    assert turn.error is not None and turn.error.code == "turn_step_limit"
    assert len(h.model.requests) == DEFAULT_MAX_STEPS == 200
    assert "max_steps" in turn.error.message


def _costly(prompt: int) -> Callable[[ModelRequest], list[ModelStreamChunk]]:
    ids = count()

    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        n = next(ids)
        usage = UsageSnapshot(prompt_tokens=prompt, completion_tokens=10)
        *call, _ = tool_reply("read_file", {"path": f"missing-{n}.py"}, call_id=f"c{n}")
        return [*call, UsageChunk(usage=usage), CompletedChunk(stop_reason="tool_calls")]

    return respond


async def test_the_turn_token_limit_fails_the_turn(tmp_path: Path) -> None:
    limits = TurnLimits(max_turn_tokens=3_000)
    async with harness(tmp_path, _costly(990), limits=limits) as h:
        turn = await h.run("loop")
    assert turn.error is not None and turn.error.code == "turn_token_limit"
    assert len(h.model.requests) == 3
    assert "3,000 tokens" in turn.error.message and "max_turn_tokens" in turn.error.message


async def test_a_turn_of_big_prompts_hits_the_default_token_limit(tmp_path: Path) -> None:
    async with harness(tmp_path, _costly(1_000_000)) as h:
        turn = await h.run("loop")
    assert turn.error is not None and turn.error.code == "turn_token_limit"
    assert len(h.model.requests) == 10


def _answer(text: str, usage: UsageSnapshot) -> list[ModelStreamChunk]:
    return [TextDeltaChunk(text=text), UsageChunk(usage=usage), CompletedChunk(stop_reason="stop")]


async def test_the_token_limit_counts_this_turn_only(tmp_path: Path) -> None:
    limits = TurnLimits(max_turn_tokens=2_500)
    spent = UsageSnapshot(prompt_tokens=2_000)
    script = [_answer("one", spent), _answer("two", spent)]
    async with harness(tmp_path, script, limits=limits) as h:
        first = await h.run("first")
        second = await h.run("second")
    assert (first.status, second.status) == ("completed", "completed")


async def test_the_cost_budget_is_per_turn_and_stops_a_loop(tmp_path: Path) -> None:
    limits = TurnLimits(cost_budget_usd=0.05)
    ids = count()

    def respond(request: ModelRequest) -> list[ModelStreamChunk]:
        n = next(ids)
        if n == 0:
            return _answer("cheap", UsageSnapshot(prompt_tokens=10, cost_usd=0.04))
        *call, _ = tool_reply("read_file", {"path": f"missing-{n}.py"}, call_id=f"c{n}")
        usage = UsageSnapshot(prompt_tokens=10, cost_usd=0.02)
        return [*call, UsageChunk(usage=usage), CompletedChunk(stop_reason="tool_calls")]

    async with harness(tmp_path, respond, limits=limits) as h:
        first = await h.run("first")
        second = await h.run("loop")
    assert first.status == "completed"
    assert second.error is not None and second.error.code == "budget_exhausted"
    assert len(h.model.requests) == 1 + 3


async def test_an_unattended_model_repeating_a_question_it_has_no_tool_for_is_stopped(
    tmp_path: Path,
) -> None:
    question = ("request_user_input", {"question": "Which file?"})
    async with harness(tmp_path, forever(question)) as h:
        turn_id = await h.service.start_turn(h.thread_id, "fix it", disable_user_input=True)
        with anyio.fail_after(30):
            turn = await h.service.wait_turn(h.thread_id, turn_id)
    assert turn.error is not None and turn.error.code == "tool_storm_stopped"
    assert len(h.model.requests) <= A_FEW_DOZEN
