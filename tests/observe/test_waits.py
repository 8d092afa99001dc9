"""Time spent waiting for the user is observed: each wait for an approval
or an answer is a JSON line and a span under its turn, with the decision
and how long it took; a turn stopped while it waited, then re-armed by the
next process, leaves two whole span trees (one a process), never a span
without its parent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from kun.model.redact import Redactor
from kun.model.scripted import ScriptedModelClient, text_reply, tool_reply
from kun.observe.observer import Observer
from kun.observe.otel import OtelSpans
from kun.runtime.rearm import rearm
from kun.runtime.reconcile import reconcile_orphaned_turns
from kun.runtime.service import TurnService
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from kun.tools.host import ToolHost
from tests.observe.support import SECRET, LeakyTool, Lines, observed, until

pytestmark = pytest.mark.anyio
PAUSE = 0.05


class Traced:
    """An observer writing to a list and to the SDK's in-memory exporter."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.lines = Lines()
        self.observer = Observer(sink=self.lines, spans=OtelSpans(provider))

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _whole_tree(spans: list[ReadableSpan]) -> Iterator[ReadableSpan]:
    """Every span's parent is among ``spans`` and encloses it in time; the
    roots are yielded."""
    ids = {s.context.span_id: s for s in spans if s.context is not None}
    for span in spans:
        if span.parent is None:
            yield span
            continue
        parent = ids[span.parent.span_id]
        assert parent.start_time is not None and parent.end_time is not None
        assert span.start_time is not None and span.end_time is not None
        assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time


def _peek_then(text: str) -> ScriptedModelClient:
    return ScriptedModelClient(
        [tool_reply("peek", {"what": "env"}, call_id="c1"), text_reply(text)]
    )


async def _approve_after_a_pause(service: TurnService, thread_id: str, decision: str) -> str:
    await until(lambda: service.state(thread_id).pending_approvals)
    await anyio.sleep(PAUSE)
    (approval,) = service.state(thread_id).pending_approvals
    await service.answer_approval(approval, decision)
    return approval


@pytest.mark.parametrize("decision", ["approved", "denied"])
async def test_a_wait_for_an_approval_is_a_line_and_a_span_with_its_decision(
    tmp_path: Path, decision: str
) -> None:
    traced = Traced()
    model = _peek_then("done")
    async with observed(tmp_path, traced.observer, model=model, policy="always") as (
        service,
        thread_id,
    ):
        turn_id = await service.start_turn(thread_id, "peek")
        approval = await _approve_after_a_pause(service, thread_id, decision)
        with anyio.fail_after(10):
            await service.wait_turn(thread_id, turn_id)
        await until(lambda: traced.lines.of("turn"))
    traced.observer.close()
    (wait,) = traced.lines.of("wait")
    assert wait["wait"] == "approval" and wait["pending_id"] == approval
    assert wait["tool"] == "peek" and wait["decision"] == decision
    assert wait["duration_ms"] >= PAUSE * 1000 and wait["resumed"] is False
    assert wait["turn_id"] == turn_id and wait["step"] == 0
    (turn,) = traced.lines.of("turn")
    assert turn["waits"] == 1 and turn["wait_ms"] == wait["duration_ms"]
    (span,) = traced.named("wait_for_user approval")
    (turn_span,) = traced.named("invoke_agent")
    assert span.parent is not None and turn_span.context is not None
    assert span.parent.span_id == turn_span.context.span_id
    attributes = _attributes(span)
    assert attributes["kun.decision"] == decision and attributes["kun.tool"] == "peek"
    assert attributes["kun.duration_ms"] == wait["duration_ms"]
    assert span.status.status_code is StatusCode.UNSET
    assert _attributes(turn_span)["kun.wait_ms"] == wait["duration_ms"]
    assert list(_whole_tree(traced.spans())) == [turn_span]


async def test_a_wait_cut_short_by_an_interrupt_is_interrupted(tmp_path: Path) -> None:
    traced = Traced()
    async with observed(tmp_path, traced.observer, model=_peek_then("x"), policy="always") as (
        service,
        thread_id,
    ):
        turn_id = await service.start_turn(thread_id, "peek")
        await until(lambda: service.state(thread_id).pending_approvals)
        await service.interrupt_turn(thread_id, turn_id)
        await until(lambda: traced.lines.of("turn"))
    traced.observer.close()
    (wait,) = traced.lines.of("wait")
    assert wait["decision"] == "interrupted"
    assert traced.lines.of("turn")[0]["status"] == "aborted"
    (span,) = traced.named("wait_for_user")
    assert _attributes(span)["kun.decision"] == "interrupted"
    assert len(list(_whole_tree(traced.spans()))) == 1


class Asking:
    """Asks the user which environment, and says what it was told."""

    name = "choose"
    spec = make_spec("choose", "asks the user", {})

    @property
    def effect(self) -> ToolEffect:
        return "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        assert ctx.ask_user is not None
        return ToolOutput(output=f"told {await ctx.ask_user('Which env?', ('a', 'b'))}")


async def test_a_wait_for_an_answer_is_a_question_answered(tmp_path: Path) -> None:
    traced = Traced()
    model = ScriptedModelClient([tool_reply("choose", {}, call_id="c1"), text_reply("ok")])
    tools = ToolHost([Asking()])
    async with observed(tmp_path, traced.observer, model=model, tools=tools) as (
        service,
        thread_id,
    ):
        turn_id = await service.start_turn(thread_id, "choose")
        await until(lambda: service.state(thread_id).pending_user_inputs)
        await anyio.sleep(PAUSE)
        (request,) = service.state(thread_id).pending_user_inputs
        await service.answer_user_input(request, "a")
        with anyio.fail_after(10):
            await service.wait_turn(thread_id, turn_id)
        await until(lambda: traced.lines.of("turn"))
    traced.observer.close()
    (wait,) = traced.lines.of("wait")
    assert wait["wait"] == "question" and wait["decision"] == "answered"
    assert wait["pending_id"] == request and wait["duration_ms"] >= PAUSE * 1000
    (span,) = traced.named("wait_for_user question")
    assert _attributes(span)["kun.decision"] == "answered"
    (tool,) = traced.named("execute_tool choose")
    assert span.parent is not None and tool.context is not None
    assert len(list(_whole_tree(traced.spans()))) == 1


async def test_a_wait_across_a_restart_leaves_two_whole_span_trees(tmp_path: Path) -> None:
    tools = ToolHost([LeakyTool()], redact=Redactor([SECRET]).scrub)
    first = Traced()
    model = ScriptedModelClient([tool_reply("peek", {"what": "env"}, call_id="c1")])
    async with observed(tmp_path, first.observer, model=model, tools=tools, policy="always") as (
        service,
        thread_id,
    ):
        turn_id = await service.start_turn(thread_id, "peek")
        await until(lambda: service.state(thread_id).pending_approvals)
    first.observer.close()
    (wait,) = first.lines.of("wait")
    assert wait["decision"] == "suspended" and wait["resumed"] is False
    assert first.lines.of("turn")[0]["status"] == "suspended"
    (root,) = _whole_tree(first.spans())
    assert _attributes(root)["kun.status"] == "suspended"
    assert root.status.status_code is StatusCode.UNSET

    second = Traced()
    async with observed(
        tmp_path,
        second.observer,
        model=ScriptedModelClient([text_reply("done")]),
        tools=tools,
        thread_id=thread_id,
    ) as (service, _):
        await reconcile_orphaned_turns(service)
        assert await rearm(service, thread_id) == turn_id
        await _approve_after_a_pause(service, thread_id, "approved")
        with anyio.fail_after(10):
            settled = await service.wait_turn(thread_id, turn_id)
        await until(lambda: second.lines.of("turn"))
    second.observer.close()
    assert settled.status == "completed"
    (wait,) = second.lines.of("wait")
    assert wait["decision"] == "approved" and wait["resumed"] is True
    assert wait["tool"] == "peek" and wait["turn_id"] == turn_id
    (root,) = _whole_tree(second.spans())
    names = sorted(s.name for s in second.spans())
    assert names == [
        "chat scripted",
        "execute_tool peek",
        "invoke_agent kun",
        "wait_for_user approval",
    ]
    assert _attributes(root)["kun.status"] == "completed"
    (span,) = second.named("wait_for_user")
    assert _attributes(span)["kun.resumed"] is True
