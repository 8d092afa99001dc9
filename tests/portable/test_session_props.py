"""Invariants of session imports, over sessions of any shape: the log always
replays, nothing the importer does not know disappears (one warning per
unknown record or block, one per unreadable line), and the same session
always gives the same events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.portable.claude_code import import_claude_code
from kun.portable.codex import import_codex
from kun.portable.sessions import Record

_TEXT = st.text(max_size=20)
_TS = st.integers(0, 59).map(lambda s: f"2025-10-01T12:00:{s:02d}Z")
_ODD = st.sampled_from(["file-history-snapshot", "queue-operation", "x", ""])

_CLAUDE_BLOCK = st.one_of(
    st.builds(lambda t: ({"type": "text", "text": t}, 0), _TEXT),
    st.builds(
        lambda i, t: ({"type": "tool_use", "id": i, "name": "Read", "input": {"p": t}}, 0),
        st.sampled_from(["t1", "t2"]),
        _TEXT,
    ),
    st.builds(lambda t: ({"type": "thinking", "thinking": t, "signature": "s"}, 0), _TEXT),
    st.builds(lambda k: ({"type": k}, 1), _ODD),
)
_RESULT_BLOCK = st.one_of(
    st.builds(lambda t: ({"type": "text", "text": t}, 0), _TEXT),
    st.builds(
        lambda i, t: ({"type": "tool_result", "tool_use_id": i, "content": t}, 0),
        st.sampled_from(["t1", "t2", "t9"]),
        _TEXT,
    ),
    st.builds(lambda k: ({"type": k}, 1), _ODD),
)


def _claude_record(kind: str, blocks: list[tuple[dict[str, Any], int]], ts: str) -> tuple[Any, int]:
    content = [block for block, _ in blocks]
    unknown = sum(odd for _, odd in blocks)
    usage = {"input_tokens": 1, "output_tokens": 2}
    message = {"id": f"m{len(content)}", "model": "m", "content": content, "usage": usage}
    return {"type": kind, "sessionId": "s", "timestamp": ts, "message": message}, unknown


_CLAUDE = st.one_of(
    st.builds(_claude_record, st.just("assistant"), st.lists(_CLAUDE_BLOCK, max_size=4), _TS),
    st.builds(_claude_record, st.just("user"), st.lists(_RESULT_BLOCK, max_size=4), _TS),
    st.builds(
        lambda t, ts: ({"type": "user", "message": {"content": t}, "timestamp": ts}, 0), _TEXT, _TS
    ),
    st.builds(lambda t: ({"type": "summary", "summary": t}, 0), _TEXT),
    st.builds(lambda k: ({"type": k, "timestamp": "2025-10-01T12:00:00Z"}, 1), _ODD),
    st.just((None, 0)),
)

_CODEX_ITEM = st.one_of(
    st.builds(
        lambda r, t: ({"type": "message", "role": r, "content": [{"text": t}]}, 0),
        st.sampled_from(["user", "assistant", "developer"]),
        _TEXT,
    ),
    st.builds(
        lambda t: ({"type": "function_call", "call_id": "c", "name": "shell", "arguments": t}, 0),
        _TEXT,
    ),
    st.builds(lambda t: ({"type": "function_call_output", "call_id": "c", "output": t}, 0), _TEXT),
    st.builds(lambda t: ({"type": "reasoning", "summary": [{"text": t}]}, 0), _TEXT),
    st.builds(lambda k: ({"type": k}, 1), _ODD),
)
_CODEX = st.one_of(
    st.builds(
        lambda p, ts: ({"type": "response_item", "timestamp": ts, "payload": p[0]}, p[1]),
        _CODEX_ITEM,
        _TS,
    ),
    st.builds(
        lambda n: (
            {
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {"n": n},
                        "last_token_usage": {"input_tokens": n},
                    },
                },
            },
            0,
        ),
        st.integers(0, 3),
    ),
    st.builds(lambda m: ({"type": "turn_context", "payload": {"model": m}}, 0), _TEXT),
    st.builds(lambda k: ({"type": k, "payload": {}}, 1), _ODD),
    st.just((None, 0)),
)
_META = {"type": "session_meta", "payload": {"id": "s", "cwd": "/w"}}
_OPENING = {"type": "user", "sessionId": "s", "message": {"content": "go"}}


def _check(events: list[ev.Event], again: list[ev.Event], unknown: int, unreadable: int) -> None:
    replay(events)
    assert events == again
    codes = [e.code for e in events if isinstance(e, ev.WarningEvent)]
    assert codes.count("import_unknown_record") == unknown
    assert codes.count("import_unreadable_line") == unreadable
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


@settings(max_examples=60, deadline=None)
@given(st.lists(_CLAUDE, max_size=12))
def test_any_claude_code_session_imports_to_a_log_that_replays(
    drawn: list[tuple[Any, int]],
) -> None:
    records: list[Record] = [(0, _OPENING)] + [(n, r) for n, (r, _) in enumerate(drawn, 1)]
    events = import_claude_code(Path("s.jsonl"), records)
    again = import_claude_code(Path("s.jsonl"), records)
    unreadable = sum(1 for _, r in records if r is None)
    _check(events, again, sum(odd for _, odd in drawn), unreadable)


@settings(max_examples=60, deadline=None)
@given(st.lists(_CODEX, max_size=12))
def test_any_codex_rollout_imports_to_a_log_that_replays(drawn: list[tuple[Any, int]]) -> None:
    records: list[Record] = [(0, _META)] + [(n, r) for n, (r, _) in enumerate(drawn, 1)]
    events = import_codex(Path("r.jsonl"), records)
    again = import_codex(Path("r.jsonl"), records)
    unreadable = sum(1 for _, r in records if r is None)
    _check(events, again, sum(odd for _, odd in drawn), unreadable)
