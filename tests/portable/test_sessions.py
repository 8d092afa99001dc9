"""Codex and Claude Code sessions imported as kun threads: messages, tool
calls and results, usage and workspace arrive; what kun does not know is a
warning naming it; importing again finds the same thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from kun.domain.state import ThreadState
from kun.portable.errors import ImportChanged, SourceRefused
from kun.portable.sessions import import_session, session_thread_id
from kun.store.paths import blobs_dir, log_path
from kun.store.replay import replay_log

CODEX_ID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
CLAUDE_ID = "6f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"


def _ts(second: int) -> str:
    return f"2025-10-01T12:00:{second:02d}.000Z"


def codex_lines() -> list[dict[str, Any]]:
    def line(second: int, kind: str, **payload: Any) -> dict[str, Any]:
        return {"timestamp": _ts(second), "type": kind, "payload": payload}

    usage = {
        "input_tokens": 1200,
        "cached_input_tokens": 1000,
        "output_tokens": 80,
        "reasoning_output_tokens": 30,
        "total_tokens": 1280,
    }
    info = {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 1}
    return [
        line(
            0,
            "session_meta",
            id=CODEX_ID,
            timestamp=_ts(0),
            cwd="/home/maya/ledger",
            originator="codex_cli_rs",
            cli_version="0.44.0",
            model_provider="openai",
        ),
        line(
            1,
            "response_item",
            type="message",
            role="user",
            content=[
                {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}
            ],
        ),
        line(
            2,
            "turn_context",
            cwd="/home/maya/ledger",
            approval_policy="on-request",
            model="gpt-5-codex",
        ),
        line(
            3,
            "response_item",
            type="message",
            role="user",
            content=[{"type": "input_text", "text": "List the files"}],
        ),
        line(3, "event_msg", type="user_message", message="List the files", images=[]),
        line(
            4,
            "response_item",
            type="reasoning",
            summary=[{"type": "summary_text", "text": "Use ls."}],
            encrypted_content="gAAA",
        ),
        line(
            5,
            "response_item",
            type="function_call",
            name="shell",
            arguments='{"command":["ls"]}',
            call_id="call_1",
        ),
        line(
            6,
            "response_item",
            type="function_call_output",
            call_id="call_1",
            output='{"output":"a.py\\nb.py\\n","metadata":{"exit_code":0}}',
        ),
        line(7, "event_msg", type="token_count", info=info, rate_limits=None),
        line(7, "event_msg", type="token_count", info=info, rate_limits={"primary": None}),
        line(
            8,
            "response_item",
            type="message",
            role="assistant",
            content=[{"type": "output_text", "text": "a.py and b.py"}],
        ),
        line(8, "event_msg", type="agent_message", message="a.py and b.py"),
        line(9, "response_item", type="ghost_snapshot", ghost_commit={"id": "abc"}),
        line(9, "event_msg", type="task_complete", last_agent_message="a.py and b.py"),
    ]


def claude_lines() -> list[dict[str, Any]]:
    base = {
        "sessionId": CLAUDE_ID,
        "cwd": "/home/maya/shop",
        "version": "1.0.120",
        "gitBranch": "main",
        "isSidechain": False,
        "userType": "external",
    }
    usage = {
        "input_tokens": 4,
        "cache_creation_input_tokens": 500,
        "cache_read_input_tokens": 12000,
        "output_tokens": 60,
    }

    def rec(n: int, kind: str, parent: int | None, **fields: Any) -> dict[str, Any]:
        return {
            **base,
            "type": kind,
            "uuid": f"u{n}",
            "parentUuid": parent and f"u{parent}",
            "timestamp": _ts(n),
            **fields,
        }

    def said(n: int, parent: int, block: dict[str, Any]) -> dict[str, Any]:
        message = {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [block],
            "usage": usage,
        }
        return rec(n, "assistant", parent, message=message, requestId="req_1")

    return [
        {"type": "summary", "summary": "Fix the cart total", "leafUuid": "u6"},
        rec(1, "user", None, message={"role": "user", "content": "Why is the cart total off?"}),
        said(2, 1, {"type": "thinking", "thinking": "Check cart.py", "signature": "sig"}),
        said(3, 2, {"type": "text", "text": "Reading cart.py."}),
        said(
            4,
            3,
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Read",
                "input": {"file_path": "cart.py"},
            },
        ),
        rec(
            5,
            "user",
            4,
            message={
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "total = sum(p)"}
                ],
            },
            toolUseResult={"type": "text"},
        ),
        rec(6, "system", 5, content="Running PostToolUse hooks", level="info"),
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
    ]


def _write(path: Path, lines: list[dict[str, Any]], *, torn: bool = False) -> Path:
    data = b"".join(msgspec.json.encode(line) + b"\n" for line in lines)
    path.write_bytes(data + (b'{"type":"user","mess' if torn else b""))
    return path


def _state(home: Path, thread_id: str) -> ThreadState:
    return replay_log(log_path(home, thread_id))


def _items(state: ThreadState) -> list[Any]:
    return [item for turn in state.turns for item in turn.items]


def test_codex_rollout_becomes_a_thread(tmp_path: Path) -> None:
    source = _write(tmp_path / "rollout.jsonl", codex_lines())
    result = import_session(tmp_path / "home", source, "codex", replace_changed=False)
    assert result.thread_id == session_thread_id("codex", CODEX_ID)
    state = _state(tmp_path / "home", result.thread_id)
    assert state.settings.workspace == "/home/maya/ledger"
    assert state.settings.title == "List the files"
    assert [turn.model for turn in state.turns] == ["gpt-5-codex"]
    kinds = [(type(i).__name__, getattr(i, "code", None)) for i in _items(state)]
    assert [w.code for w in state.warnings] == ["import_context"]
    assert kinds == [
        ("UserMessage", None),
        ("AssistantReasoning", None),
        ("ToolCall", None),
        ("ToolResult", None),
        ("AssistantText", None),
        ("WarningItem", "import_unknown_record"),
    ]
    items = _items(state)
    assert bytes(items[2].arguments) == b'{"command":["ls"]}'
    assert (items[3].name, items[3].output, items[3].is_error) == ("shell", "a.py\nb.py\n", False)
    assert "response_item/ghost_snapshot" in items[5].message
    assert state.usage.calls == 1
    assert (state.usage.prompt_tokens, state.usage.cache_hit_tokens) == (1200, 1000)
    assert state.usage.reasoning_tokens == 30


def test_claude_code_session_becomes_a_thread(tmp_path: Path) -> None:
    source = _write(tmp_path / f"{CLAUDE_ID}.jsonl", claude_lines(), torn=True)
    result = import_session(tmp_path / "home", source, "claude-code", replace_changed=False)
    assert result.thread_id == session_thread_id("claude-code", CLAUDE_ID)
    state = _state(tmp_path / "home", result.thread_id)
    assert (state.settings.workspace, state.settings.title) == (
        "/home/maya/shop",
        "Fix the cart total",
    )
    assert state.turns[0].model == "claude-sonnet-4-5"
    items = _items(state)
    assert [type(i).__name__ for i in items] == [
        "UserMessage",
        "AssistantReasoning",
        "AssistantText",
        "ToolCall",
        "ToolResult",
        "WarningItem",
        "WarningItem",
        "WarningItem",
    ]
    assert items[1].signature == "sig"
    assert (items[4].call_id, items[4].name, items[4].output) == (
        "toolu_1",
        "Read",
        "total = sum(p)",
    )
    assert [i.code for i in items[5:]] == [
        "claude_code_system",
        "import_unknown_record",
        "import_unreadable_line",
    ]
    assert "'file-history-snapshot'" in items[6].message
    assert state.usage.calls == 1
    assert (state.usage.prompt_tokens, state.usage.cache_hit_tokens) == (12504, 12000)


@pytest.mark.parametrize(
    ("source", "lines"), [("codex", codex_lines), ("claude-code", claude_lines)]
)
def test_importing_again_finds_the_same_thread(tmp_path: Path, source: str, lines: Any) -> None:
    home = tmp_path / "home"
    path = _write(tmp_path / "s.jsonl", lines())
    first = import_session(home, path, source, replace_changed=False)
    log = log_path(home, first.thread_id).read_bytes()
    again = import_session(home, path, source, replace_changed=False)
    assert (again.thread_id, again.outcome) == (first.thread_id, "already_imported")
    _write(path, [*lines(), *lines()[-3:]])
    with pytest.raises(ImportChanged, match="the session has 3 new records since it was imported"):
        import_session(home, path, source, replace_changed=False)
    assert log_path(home, first.thread_id).read_bytes() == log
    replaced = import_session(home, path, source, replace_changed=True)
    assert (replaced.thread_id, replaced.outcome) == (first.thread_id, "replaced")
    assert len(_items(_state(home, first.thread_id))) > len(_items(replay_log_bytes(tmp_path, log)))
    assert sorted(p.name for p in home.iterdir()) == ["threads", "trash"]


def replay_log_bytes(tmp_path: Path, data: bytes) -> ThreadState:
    path = tmp_path / "old" / "thr_old" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return replay_log(path)


def test_a_file_that_is_no_session_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("hello\n")
    with pytest.raises(SourceRefused, match="no JSON lines"):
        import_session(tmp_path / "home", path, "codex", replace_changed=False)
    _write(path, claude_lines())
    with pytest.raises(SourceRefused, match="not a Codex rollout"):
        import_session(tmp_path / "home", path, "codex", replace_changed=False)


def test_a_big_tool_output_goes_to_a_side_file(tmp_path: Path) -> None:
    big = "x" * 100_000
    lines = claude_lines()
    lines[5]["message"]["content"][0]["content"] = big
    source = _write(tmp_path / "s.jsonl", lines)
    home = tmp_path / "home"
    result = import_session(home, source, "claude-code", replace_changed=False)
    result_item = _items(_state(home, result.thread_id))[4]
    assert result_item.output_ref is not None and len(result_item.output) < 4096
    blob = blobs_dir(home, result.thread_id) / result_item.output_ref.sha256
    assert blob.read_text() == big
    assert (
        max(len(line) for line in log_path(home, result.thread_id).read_bytes().splitlines()) < 8192
    )


def test_a_codex_rollout_from_before_wrapped_lines_imports_the_same(tmp_path: Path) -> None:
    wrapped = [line for line in codex_lines() if line["type"] in ("session_meta", "response_item")]
    legacy: list[Any] = [{"id": CODEX_ID, "timestamp": _ts(0), "instructions": None}]
    legacy += [line["payload"] for line in wrapped[1:]]
    legacy.insert(2, {"record_type": "state"})
    home = tmp_path / "home"
    result = import_session(
        home, _write(tmp_path / "old.jsonl", legacy), "codex", replace_changed=False
    )
    assert result.thread_id == session_thread_id("codex", CODEX_ID)
    kinds = [type(i).__name__ for i in _items(_state(home, result.thread_id))]
    assert kinds == [
        "UserMessage",
        "AssistantReasoning",
        "ToolCall",
        "ToolResult",
        "AssistantText",
        "WarningItem",
    ]
