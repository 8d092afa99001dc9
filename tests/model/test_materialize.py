"""Non-streaming bodies become the same chunks their streams would."""

from __future__ import annotations

import msgspec

from kun.contracts.model import ReasoningDeltaChunk, TextDeltaChunk
from kun.model.wire import materialize

from .support import Run, calls, error, fixture, reasoning, stop_reason, text, usage


def test_chat_completion_body() -> None:
    body = msgspec.json.encode(
        {
            "id": "chatcmpl-nonstream",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Checking.",
                        "reasoning_content": "Plan.",
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "ls", "arguments": '{"dir": "."}'},
                            },
                            {
                                "id": "call_2",
                                "type": "function",
                                "function": {"name": "pwd", "arguments": ""},
                            },
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
    )
    chunks = materialize("chat_completions", body)
    assert reasoning(chunks) == "Plan."
    assert text(chunks) == "Checking."
    assert calls(chunks) == [
        ("call_1", "ls", {"dir": "."}, "none"),
        ("call_2", "pwd", {}, "empty"),
    ]
    found = usage(chunks)
    assert found is not None
    assert found.request_id == "chatcmpl-nonstream"
    assert stop_reason(chunks) == "tool_calls"


def test_chat_completion_error_body_and_garbage() -> None:
    failure = error(
        materialize("chat_completions", b'{"error":{"message":"bad key","type":"auth_error"}}')
    )
    assert (failure.code, failure.message) == ("auth_error", "bad key")
    assert error(materialize("chat_completions", b"<html>")).code == "invalid_response"


def test_responses_body() -> None:
    body = msgspec.json.encode(
        {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "model": "gpt-4.1",
            "output": [
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "Hm."}],
                },
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Hello", "annotations": []}],
                },
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_9",
                    "name": "ls",
                    "arguments": '{"d":1}',
                },
            ],
            "usage": {"input_tokens": 5, "output_tokens": 3},
        }
    )
    chunks = materialize("responses", body)
    assert chunks[:2] == [ReasoningDeltaChunk(text="Hm."), TextDeltaChunk(text="Hello")]
    assert calls(chunks) == [("call_9", "ls", {"d": 1}, "none")]
    assert stop_reason(chunks) == "tool_calls"
    assert (
        error(
            materialize("responses", b'{"status":"failed","error":{"code":"x","message":"y"}}')
        ).code
        == "x"
    )


def test_messages_body() -> None:
    body = msgspec.json.encode(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "Think.", "signature": "sig"},
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"d": "."}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "cache_read_input_tokens": 100, "output_tokens": 9},
        }
    )
    chunks = materialize("messages", body)
    assert chunks[:3] == [
        ReasoningDeltaChunk(text="Think."),
        ReasoningDeltaChunk(text="", signature="sig"),
        TextDeltaChunk(text="Sure."),
    ]
    assert calls(chunks) == [("toolu_1", "ls", {"d": "."}, "none")]
    found = usage(chunks)
    assert found is not None
    assert (found.usage.prompt_tokens, found.usage.cache_hit_tokens) == (103, 100)
    assert stop_reason(chunks) == "tool_calls"
    overloaded = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    assert error(materialize("messages", overloaded)).code == "overloaded_error"


def test_materialized_chat_matches_streamed_chat() -> None:
    """A body equivalent to the plain-text fixture gives the same chunks,
    except that the body's text arrives in one piece."""
    streamed = Run("chat_completions", [fixture("cc_plain_text.sse")]).chunks
    body = msgspec.json.encode(
        {
            "id": "chatcmpl-AbC123",
            "model": "gpt-4o-2024-08-06",
            "choices": [{"message": {"content": "Hello, world!"}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 19,
                "completion_tokens": 4,
                "prompt_tokens_details": {"cached_tokens": 0},
            },
        }
    )
    chunks = materialize("chat_completions", body)
    assert text(chunks) == text(streamed)
    assert chunks[1:] == streamed[3:]
