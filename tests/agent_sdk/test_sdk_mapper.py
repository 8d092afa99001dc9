"""The SDK event mapper: recorded message sequences as examples, and random
sequences as a property, each replayed through kun's real reducer."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import (
    OPEN_STATUSES,
    AssistantReasoning,
    AssistantText,
    ToolCall,
    ToolResult,
)
from kun.runtime.agent_sdk.mapper import NO_RESULT, PRICE_SOURCE, SdkOutcome, sdk_usage
from kun.runtime.agent_sdk.messages import (
    AssistantMessage,
    ResultMessage,
    SdkMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    from_sdk,
)
from tests.agent_sdk.sdk_fakes import (
    SESSION,
    TOOL_RUN,
    init,
    mapper,
    replayed,
    result,
    said,
    stream,
    text_stream,
    thinking_stream,
)


def feed(messages: list[SdkMessage]) -> tuple[list[ev.Event], Any]:
    m = mapper()
    events = [e for message in messages for e in m.feed(message)]
    return events, m


def kinds(events: list[ev.Event]) -> list[str]:
    return [type(e).__struct_config__.tag for e in events]  # type: ignore[attr-defined]


def test_streamed_text_keeps_the_delta_contract() -> None:
    events, m = feed(
        [
            init(),
            stream("message_start"),
            *text_stream(0, "Hel", "lo"),
            said(TextBlock("Hello")),
            result(),
        ]
    )
    assert kinds(events) == [
        "assistant_text_delta",
        "assistant_text_delta",
        "item_completed",
        "usage",
    ]
    deltas = [e for e in events if isinstance(e, ev.AssistantTextDelta)]
    completed = next(e for e in events if isinstance(e, ev.ItemCompleted))
    assert {d.item_id for d in deltas} == {completed.item.id}
    assert completed.item == AssistantText(id=completed.item.id, text="Hello")
    assert m.session_id == SESSION
    assert m.outcome == SdkOutcome("completed", stop_reason="end_turn")
    turn = replayed(events, "completed").turns[0]
    assert [i.text for i in turn.items if isinstance(i, AssistantText)] == ["Hello"]


def test_a_text_block_never_streamed_is_one_whole_item() -> None:
    events, _ = feed([said(TextBlock("Just this.")), result()])
    assert kinds(events) == ["item_completed", "usage"]


def test_tool_calls_are_started_and_finished_with_kun_names() -> None:
    events, m = feed(TOOL_RUN)
    assert kinds(events) == [
        "assistant_text_delta",
        "assistant_text_delta",
        "item_completed",
        "item_created",
        "tool_call_started",
        "tool_call_finished",
        "item_completed",
        "item_created",
        "tool_call_started",
        "tool_call_finished",
        "item_completed",
        "assistant_text_delta",
        "item_completed",
        "usage",
    ]
    started = [e for e in events if isinstance(e, ev.ToolCallStarted)]
    assert [(s.call_id, s.name) for s in started] == [
        ("toolu_1", "Bash"),
        ("toolu_2", "todo_write"),
    ]
    finished = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert [f.status for f in finished] == ["completed", "failed"]
    turn = replayed(events, "completed").turns[0]
    calls = [i for i in turn.items if isinstance(i, ToolCall)]
    results = [i for i in turn.items if isinstance(i, ToolResult)]
    assert [bytes(c.arguments) for c in calls] == [b'{"command": "ls"}', b'{"todos": []}']
    assert [(r.call_id, r.output, r.is_error) for r in results] == [
        ("toolu_1", "a.py\nb.py", False),
        ("toolu_2", "no such todo", True),
    ]
    assert [c.status for c in calls] == ["completed", "failed"]
    assert turn.tools_in_flight == () and m.open_calls == 0


def test_thinking_streams_as_reasoning_with_its_signature() -> None:
    events, _ = feed(
        [
            stream("message_start"),
            *thinking_stream(0, "Consider ", "the files."),
            *text_stream(1, "Done."),
            said(ThinkingBlock("Consider the files.", "sig-1")),
            said(TextBlock("Done.")),
            result(),
        ]
    )
    reasoning = [e for e in events if isinstance(e, ev.AssistantReasoningDelta)]
    assert [d.text for d in reasoning] == ["Consider ", "the files."]
    turn = replayed(events, "completed").turns[0]
    thought = next(i for i in turn.items if isinstance(i, AssistantReasoning))
    assert (thought.id, thought.text, thought.signature) == (
        reasoning[0].item_id,
        "Consider the files.",
        "sig-1",
    )
    assert [type(i).__name__ for i in turn.items] == [
        "UserMessage",
        "AssistantReasoning",
        "AssistantText",
    ]


def test_usage_has_anthropic_semantics_and_the_sdks_cost() -> None:
    events, _ = feed([result(cost=0.5)])
    usage = next(e for e in events if isinstance(e, ev.Usage))
    assert usage.usage == sdk_usage(
        {
            "input_tokens": 12,
            "cache_read_input_tokens": 4_000,
            "cache_creation_input_tokens": 300,
            "output_tokens": 80,
        },
        0.5,
    )
    assert (usage.usage.prompt_tokens, usage.usage.cache_hit_tokens) == (4_312, 4_000)
    assert (usage.usage.cache_miss_tokens, usage.usage.cache_write_tokens) == (312, 300)
    assert (usage.provider, usage.model, usage.price_source) == (
        "claude",
        "claude-sonnet-4-5",
        PRICE_SOURCE,
    )
    state = replayed(events, "completed")
    assert state.usage.cost_usd == 0.5 and state.turns[0].usage.prompt_tokens == 4_312


@pytest.mark.parametrize(
    ("message", "code", "detail"),
    [
        (
            result("error_max_turns", is_error=True, errors=["max turns"]),
            "agent_sdk_max_turns",
            "max turns",
        ),
        (
            result("error_during_execution", is_error=True, errors=["boom"]),
            "agent_sdk_during_execution",
            "boom",
        ),
        (
            result("success", is_error=True, result="Overloaded", api_error_status=529),
            "agent_sdk_api_error",
            "Overloaded (HTTP 529)",
        ),
    ],
)
def test_error_results_fail_with_a_code(message: ResultMessage, code: str, detail: str) -> None:
    events, m = feed([said(ToolUseBlock("toolu_9", "Bash", {"command": "x"})), message])
    assert m.outcome is not None and m.outcome.status == "failed"
    assert m.outcome.code == code and m.outcome.message is not None
    assert detail in m.outcome.message
    # The call the SDK never answered is finished, with an error result.
    turn = replayed(events, "failed").turns[0]
    result_item = next(i for i in turn.items if isinstance(i, ToolResult))
    assert result_item.code == NO_RESULT and result_item.is_error


def test_an_interrupted_run_is_aborted_and_keeps_what_arrived() -> None:
    events, m = feed(
        [
            stream("message_start"),
            *text_stream(0, "Working on"),
            said(ToolUseBlock("toolu_3", "Bash", {"command": "sleep 100"})),
            result(
                "error_during_execution",
                is_error=True,
                terminal_reason="aborted_tools",
                usage={"input_tokens": 5, "output_tokens": 1},
            ),
        ]
    )
    assert m.outcome == SdkOutcome("aborted")
    turn = replayed(events, "aborted").turns[0]
    text = next(i for i in turn.items if isinstance(i, AssistantText))
    assert (text.text, text.status) == ("Working on", "aborted")
    call = next(i for i in turn.items if isinstance(i, ToolCall))
    assert call.status == "aborted"
    assert sum(isinstance(i, ToolResult) for i in turn.items) == 1
    assert turn.usage.calls == 1


def test_sub_agent_messages_are_the_sdks_internals() -> None:
    events, _ = feed(
        [
            said(ToolUseBlock("toolu_t", "Task", {"prompt": "look"})),
            AssistantMessage(
                content=[TextBlock("inner"), ToolUseBlock("toolu_in", "Read", {})],
                parent_tool_use_id="toolu_t",
            ),
            UserMessage([ToolResultBlock("toolu_in", "x")], parent_tool_use_id="toolu_t"),
            StreamEvent(
                event={
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "z"},
                },
                parent_tool_use_id="toolu_t",
            ),
            UserMessage([ToolResultBlock("toolu_t", "found it")]),
            result(),
        ]
    )
    turn = replayed(events, "completed").turns[0]
    assert [type(i).__name__ for i in turn.items] == ["UserMessage", "ToolCall", "ToolResult"]


def test_a_repeated_block_or_result_is_recorded_once() -> None:
    use = said(ToolUseBlock("toolu_1", "Bash", {"command": "ls"}))
    done = UserMessage([ToolResultBlock("toolu_1", "ok")])
    events, _ = feed(
        [use, use, done, done, UserMessage([ToolResultBlock("unknown", "?")]), result()]
    )
    assert kinds(events) == [
        "item_created",
        "tool_call_started",
        "tool_call_finished",
        "item_completed",
        "usage",
    ]


def test_converter_reads_the_real_sdk_objects() -> None:
    if importlib.util.find_spec("claude_agent_sdk") is None:
        pytest.skip("the kun[claude] extra is not installed")
    import claude_agent_sdk as sdk

    real = [
        sdk.SystemMessage("init", {"session_id": "s1"}),
        sdk.StreamEvent(uuid="u", session_id="s1", event={"type": "message_start"}),
        sdk.AssistantMessage(
            content=[
                sdk.ThinkingBlock("hm", "sig"),
                sdk.TextBlock("hi"),
                sdk.ToolUseBlock("t1", "Bash", {"command": "ls"}),
            ],
            model="claude-sonnet-4-5",
        ),
        sdk.UserMessage(content=[sdk.ToolResultBlock("t1", "out", False)]),
        sdk.ResultMessage(
            subtype="success",
            duration_ms=1,
            duration_api_ms=1,
            is_error=False,
            num_turns=1,
            session_id="s1",
            total_cost_usd=0.1,
            usage={"input_tokens": 1},
        ),
    ]
    shadows = [from_sdk(m) for m in real]
    assert shadows == [
        SystemMessage("init", {"session_id": "s1"}),
        StreamEvent(event={"type": "message_start"}, session_id="s1", uuid="u"),
        AssistantMessage(
            content=[
                ThinkingBlock("hm", "sig"),
                TextBlock("hi"),
                ToolUseBlock("t1", "Bash", {"command": "ls"}),
            ],
            model="claude-sonnet-4-5",
        ),
        UserMessage(content=[ToolResultBlock("t1", "out", False)]),
        ResultMessage(
            subtype="success",
            is_error=False,
            session_id="s1",
            duration_ms=1,
            num_turns=1,
            total_cost_usd=0.1,
            usage={"input_tokens": 1},
        ),
    ]
    assert from_sdk(object()) is None


# -- the property --------------------------------------------------------------

_ids = st.sampled_from(["toolu_a", "toolu_b", "toolu_c", "toolu_d"])
_names = st.sampled_from(["Bash", "Read", "mcp__kun__todo_write", "mcp__kun__create_plan"])
_text = st.text(max_size=12)
_index = st.integers(0, 2)
_parent = st.sampled_from([None, None, None, "toolu_a"])

_stream = st.one_of(
    st.builds(lambda: StreamEvent(event={"type": "message_start"})),
    st.builds(
        lambda i, k, p: StreamEvent(
            event={"type": "content_block_start", "index": i, "content_block": {"type": k}},
            parent_tool_use_id=p,
        ),
        _index,
        st.sampled_from(["text", "thinking", "tool_use"]),
        _parent,
    ),
    st.builds(
        lambda i, t, p: StreamEvent(
            event={
                "type": "content_block_delta",
                "index": i,
                "delta": {"type": "text_delta", "text": t},
            },
            parent_tool_use_id=p,
        ),
        _index,
        _text,
        _parent,
    ),
    st.builds(
        lambda i, t: StreamEvent(
            event={
                "type": "content_block_delta",
                "index": i,
                "delta": {"type": "thinking_delta", "thinking": t},
            }
        ),
        _index,
        _text,
    ),
)
_block = st.one_of(
    st.builds(TextBlock, _text),
    st.builds(ThinkingBlock, _text, st.sampled_from(["", "sig"])),
    st.builds(ToolUseBlock, _ids, _names, st.just({"x": 1})),
)
_assistant = st.builds(
    lambda blocks, p: AssistantMessage(content=blocks, parent_tool_use_id=p),
    st.lists(_block, min_size=1, max_size=3),
    _parent,
)
_user = st.one_of(
    st.builds(
        lambda ids, err, p: UserMessage(
            content=[ToolResultBlock(i, "out", err) for i in ids], parent_tool_use_id=p
        ),
        st.lists(_ids, min_size=1, max_size=2),
        st.sampled_from([None, False, True]),
        _parent,
    ),
    st.builds(UserMessage, _text),
)
_result = st.builds(
    lambda sub, err, reason, tokens, cost: ResultMessage(
        subtype=sub,
        is_error=err,
        session_id=SESSION,
        terminal_reason=reason,
        usage={"input_tokens": tokens, "cache_read_input_tokens": tokens * 2, "output_tokens": 3},
        total_cost_usd=cost,
    ),
    st.sampled_from(["success", "error_max_turns", "error_during_execution"]),
    st.booleans(),
    st.sampled_from([None, "completed", "aborted_streaming", "aborted_tools"]),
    st.integers(0, 10_000),
    st.sampled_from([None, 0.0, 0.25]),
)
_message = st.one_of(_stream, _assistant, _user, _result, st.just(init()))


@given(st.lists(_message, max_size=30), st.sampled_from(["failed", "aborted"]))
def test_any_sdk_sequence_maps_to_a_log_that_keeps_the_invariants(
    messages: list[SdkMessage], ending: str
) -> None:
    m = mapper()
    events = [e for message in messages for e in m.feed(message)]
    events += m.close(ending)  # type: ignore[arg-type]
    settled = m.outcome.status if m.outcome is not None else ending

    open_state = replayed(events)  # the reducer accepts every event
    turn = open_state.turns[0]
    assert turn.tools_in_flight == ()  # every started call is finished
    calls = [i for i in turn.items if isinstance(i, ToolCall)]
    results = [i for i in turn.items if isinstance(i, ToolResult)]
    assert sorted(c.call_id for c in calls) == sorted(r.call_id for r in results)
    assert all(i.status not in OPEN_STATUSES for i in turn.items if not isinstance(i, ToolCall))
    ids = [i.id for i in turn.items]
    assert len(ids) == len(set(ids))  # no item twice
    created = [e.item.id for e in events if isinstance(e, ev.ItemCreated)]
    assert len(created) == len(set(created))
    started = [e.item_id for e in events if isinstance(e, ev.ToolCallStarted)]
    finished = [e.item_id for e in events if isinstance(e, ev.ToolCallFinished)]
    assert sorted(started) == sorted(finished) == sorted(created)

    results_fed = [msg for msg in messages if isinstance(msg, ResultMessage)]
    assert turn.usage.calls == len(results_fed)  # one usage event per result
    assert turn.usage.prompt_tokens == sum(
        sdk_usage(r.usage, None).prompt_tokens for r in results_fed
    )
    priced = [r.total_cost_usd for r in results_fed if r.total_cost_usd is not None]
    assert turn.usage.cost_usd == pytest.approx(sum(priced))

    final = replayed(events, settled)
    assert final.turns[0].settled and final.turns[0].status == settled
    assert all(i.status not in OPEN_STATUSES for i in final.turns[0].items)
    assert final == replayed(events, settled)  # determinism
