"""Hand-built events for the store tests: one of every kind, and fillers."""

from __future__ import annotations

from typing import Any

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import (
    Approval,
    AssistantReasoning,
    AssistantText,
    Attachment,
    BlobRef,
    FileCheckpoint,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.contracts.threads import Goal, ThreadSettings, Todo
from kun.contracts.usage import UsageSnapshot

TID = "thr_test"


def warning(seq: int, thread_id: str = TID, message: str = "m") -> ev.WarningEvent:
    return ev.WarningEvent(
        seq=seq, at=1_700_000_000_000 + seq, thread_id=thread_id, code="test", message=message
    )


def delta(seq: int, thread_id: str = TID, text: str = "tok") -> ev.AssistantTextDelta:
    return ev.AssistantTextDelta(
        seq=seq,
        at=1_700_000_000_000 + seq,
        thread_id=thread_id,
        turn_id="turn_1",
        item_id="item_1",
        text=text,
    )


def warnings(first: int, last: int, thread_id: str = TID) -> list[ev.WarningEvent]:
    return [warning(seq, thread_id) for seq in range(first, last + 1)]


def every_kind(thread_id: str = TID) -> list[ev.Event]:
    """One event of every kind, numbered 1..N, with non-default fields and
    text that tries to break line framing."""
    tricky = 'line\nbreak \u2028 sep \u2029 nel \x85 quote " tab\t é 😀'
    call = ToolCall(
        id="item_tc",
        call_id="call_1",
        name="read",
        arguments=msgspec.Raw(b'{"path":"a.py","n":[1,2,{"x":null}]}'),
        arguments_text='{"path":"a.py"}',
        status="in_progress",
    )
    settings = ThreadSettings(
        workspace="/w",
        provider="p",
        model="m",
        approval_policy="never",
        title="T",
        title_auto=False,
        goal=Goal(objective="win"),
        todos=(Todo(content="a", status="in_progress"),),
        hidden=True,
        parent_thread_id="thr_parent",
    )
    bodies: list[tuple[type[ev.EventBase], dict[str, Any]]] = [
        (ev.ThreadCreated, {"settings": settings}),
        (
            ev.ThreadUpdated,
            {"title": tricky, "goal": None, "provider": None, "todos": (Todo(content="b"),)},
        ),
        (ev.ThreadForked, {"source_thread_id": "thr_src", "source_seq": 7}),
        (ev.ThreadRewound, {"before_turn_id": "turn_1"}),
        (ev.ThreadRewindUndone, {"rewind_seq": 4}),
        (
            ev.FilesRestoreStarted,
            {
                "rewind_seq": 4,
                "planned": (
                    FileCheckpoint(
                        path="a.py", before=BlobRef(sha256="0" * 64, size=1), after_sha256=None
                    ),
                ),
                "skipped": (ev.FileSkipped(path="b.py", reason=tricky),),
            },
        ),
        (
            ev.TurnStarted,
            {"provider": "p", "model": "m", "disable_user_input": True, "plan_mode": True},
        ),
        (ev.TurnSteered, {"text": tricky}),
        (
            ev.TurnQueued,
            {
                "message": UserMessage(id="item_q", text=tricky),
                "provider": "p",
                "model": "m",
                "plan_mode": True,
                "reasoning_effort": "low",
            },
        ),
        (ev.PipelineStage, {"stage": "pre_send", "step": 2}),
        (
            ev.ItemCreated,
            {
                "item": UserMessage(
                    id="item_u",
                    text=tricky,
                    steered=True,
                    attachments=(Attachment(name="a.png", mime_type="image/png", size_bytes=3),),
                )
            },
        ),
        (ev.ItemUpdated, {"item": call}),
        (ev.ItemCompleted, {"item": AssistantReasoning(id="item_r", text="hm", signature="s")}),
        (ev.AssistantTextDelta, {"item_id": "item_t", "text": tricky}),
        (ev.AssistantReasoningDelta, {"item_id": "item_r", "text": "why"}),
        (
            ev.ToolCallDelta,
            {"item_id": "item_tc", "call_id": "call_1", "name": "re", "arguments": '{"pa'},
        ),
        (ev.ToolCallStarted, {"item_id": "item_tc", "call_id": "call_1", "name": "read"}),
        (
            ev.ToolCallFinished,
            {"item_id": "item_tc", "call_id": "call_1", "status": "failed", "duration_ms": 12},
        ),
        (ev.ToolStormSuppressed, {"call_id": "call_2", "name": "read", "repeats": 3}),
        (
            ev.ApprovalRequested,
            {
                "approval_id": "appr_1",
                "call_id": "call_1",
                "tool_name": "bash",
                "summary": "rm -rf",
            },
        ),
        (ev.ApprovalResolved, {"approval_id": "appr_1", "decision": "denied", "reason": "no"}),
        (
            ev.UserInputRequested,
            {"request_id": "req_1", "question": "which?", "options": ("a", "b")},
        ),
        (ev.UserInputResolved, {"request_id": "req_1", "status": "answered", "answer": "a"}),
        (
            ev.SubagentStarted,
            {"item_id": "item_tc", "call_id": "call_1", "side_thread": "thr_side", "agent": tricky},
        ),
        (
            ev.Usage,
            {
                "usage": UsageSnapshot(
                    prompt_tokens=10,
                    completion_tokens=5,
                    reasoning_tokens=1,
                    cache_hit_tokens=4,
                    cache_miss_tokens=6,
                    cost_usd=0.25,
                ),
                "provider": "p",
                "model": "m",
                "request_id": "r",
                "price_source": "x",
                "step": 1,
            },
        ),
        (ev.WarningEvent, {"code": "output_truncated", "message": tricky}),
        (
            ev.DelegatedRuntime,
            {"engine": "claude", "mode": "rebased", "reason": "changed", "session_id": "s"},
        ),
        (
            ev.DelegatedCheckpoint,
            {"engine": "claude", "session_id": "s", "provider": "p", "workspace": "/" + tricky},
        ),
        (ev.TurnFailed, {"code": "orphaned", "message": "crashed", "severity": "fatal"}),
        (ev.TurnAborted, {"reason": "user", "discard": True}),
        (ev.TurnCompleted, {"stop_reason": "stop"}),
        (ev.LogRepaired, {"dropped_bytes": 3, "line": 9, "reason": "torn", "preview": '{"k'}),
        (ev.ThreadImported, {"source": "codex", "workspace": "/srv/" + tricky}),
        (
            ev.ItemCompleted,
            {
                "item": ToolResult(
                    id="item_res", call_id="call_1", output="ok", is_error=True, code="x"
                )
            },
        ),
        (ev.ItemCompleted, {"item": Approval(id="appr_1", status="denied", tool_name="bash")}),
        (ev.ItemCompleted, {"item": AssistantText(id="item_t", text="")}),
    ]
    return [
        cls(  # type: ignore[misc]
            seq=seq,
            at=1_700_000_000_000 + seq,
            thread_id=thread_id,
            turn_id=None if seq < 6 else "turn_1",
            **fields,
        )
        for seq, (cls, fields) in enumerate(bodies, start=1)
    ]
