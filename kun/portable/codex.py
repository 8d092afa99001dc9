"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp": ISO-8601, "type": ..., "payload": {...}}``. What
is read, by ``type`` (and the payload's own ``type``):

- ``session_meta``: ``id`` (the session id, the thread id's source), ``cwd``
  (the workspace), ``model_provider`` (the provider; ``openai`` if absent).
- ``turn_context``: ``model`` (the model from then on), ``cwd``.
- ``response_item``: ``message`` (``role`` ``user`` opens a turn, ``assistant``
  is an answer; the ``content`` parts' ``text`` joined; ``developer`` and
  ``system`` messages, and user messages that are Codex's own context
  (``<environment_context>``, ``<user_instructions>``), are the harness's
  instructions, kept as ``import_context`` warnings with their size, not as
  history), ``reasoning`` (its ``summary`` texts; encrypted content cannot be
  read), ``function_call`` (``call_id``, ``name``, ``arguments`` a JSON
  string), ``function_call_output`` (``call_id``, ``output``),
  ``custom_tool_call`` / ``custom_tool_call_output`` (``input`` is free
  text), ``local_shell_call`` and ``web_search_call`` (their ``action``).
- ``event_msg``: ``token_count`` (``info.last_token_usage``: ``input_tokens``,
  ``cached_input_tokens``, ``output_tokens``, ``reasoning_output_tokens``; a
  repeat with the same ``total_token_usage`` is the same call and counted
  once), ``turn_aborted`` (the open turn is aborted). ``user_message``,
  ``agent_message``, ``agent_reasoning*``, ``task_started``,
  ``task_complete`` and the ``*_begin``/``*_end`` of commands, MCP calls,
  patches and web searches (written in Codex's extended persistence mode)
  repeat what the response items hold and are skipped.
- ``compacted``: its ``message`` becomes a compaction summary.

Anything else becomes an ``import_unknown_record`` warning naming its kind.
Rollouts from before Codex wrapped its lines are read too (see :func:`_wrapped`).
A file with no ``session_meta`` carrying an id is refused: it is no rollout.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from kun.contracts.events import Event
from kun.model.usage import normalize_usage
from kun.portable.builder import SessionBuilder
from kun.portable.depth import TooDeep, decode_json
from kun.portable.errors import SourceRefused
from kun.portable.reading import epoch_ms, text_of, unknown, unreadable
from kun.portable.sessions import Record, session_thread_id

__all__ = ["import_codex"]

_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md")
_ECHOES = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
        "task_started",
        "task_complete",
        "exec_command_begin",
        "exec_command_end",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "patch_apply_begin",
        "patch_apply_end",
        "web_search_begin",
        "web_search_end",
    }
)


def import_codex(path: Path, records: list[Record]) -> list[Event]:
    records = _wrapped(records)
    meta = next(
        (r["payload"] for _, r in records if _is(r, "session_meta") and _id_of(r["payload"])),
        None,
    )
    if meta is None:
        raise SourceRefused(path, "no session_meta line with an id: not a Codex rollout")
    builder = SessionBuilder(
        session_thread_id("codex", _id_of(meta)), provider=meta.get("model_provider") or "openai"
    )
    reader = _Reader(builder)
    for number, record in records:
        if not isinstance(record, dict):
            unreadable(builder, number)
            continue
        builder.clock(epoch_ms(record.get("timestamp")))
        reader.read(record)
    return builder.finish()


def _wrapped(records: list[Record]) -> list[Record]:
    """Rollouts written before Codex wrapped its lines (2025) start with a
    bare ``{"id", "timestamp", "instructions"}`` and hold bare response
    items and ``{"record_type": "state"}`` lines: they read as the wrapped
    form, the state lines (resume bookkeeping) left out."""
    first = next((r for _, r in records if isinstance(r, dict)), None)
    if not isinstance(first, dict) or "type" in first or not _old_meta(first):
        return records
    wrapped: list[Record] = []
    for number, record in records:
        if record is first:
            record = {"type": "session_meta", "timestamp": first.get("timestamp"), "payload": first}
        elif isinstance(record, dict) and record.get("record_type") == "state":
            continue
        elif isinstance(record, dict) and "type" in record:
            record = {"type": "response_item", "payload": record}
        wrapped.append((number, record))
    return wrapped


def _old_meta(record: dict[str, Any]) -> bool:
    """Whether a bare first line is an old rollout's session line: a string
    ``id`` *and* a string ``timestamp``, so any JSON-lines file whose first
    object has an ``id`` is not taken for a rollout."""
    return bool(_id_of(record)) and isinstance(record.get("timestamp"), str)


def _shell_output(text: str) -> object:
    """Codex's shell tools report ``{"output": ..., "metadata": {"exit_code": ...}}``
    as a JSON string; anything else (JSON nested too deeply too) stays the
    text it is."""
    try:
        decoded = decode_json(text)
    except (msgspec.DecodeError, TooDeep):
        return text
    return decoded if isinstance(decoded, dict) and "output" in decoded else text


def _exit_code(output: dict[str, Any]) -> object:
    metadata = output.get("metadata")
    return metadata.get("exit_code") if isinstance(metadata, dict) else None


def _is(record: object, kind: str) -> bool:
    return isinstance(record, dict) and record.get("type") == kind


def _id_of(payload: object) -> str:
    value = payload.get("id") if isinstance(payload, dict) else None
    return value if isinstance(value, str) else ""


class _Reader:
    def __init__(self, builder: SessionBuilder) -> None:
        self.b = builder
        self.last_total: object = None
        self.items: dict[str, Callable[[dict[str, Any]], None]] = {
            "message": self._message,
            "reasoning": self._reasoning,
            "function_call": self._function_call,
            "custom_tool_call": self._custom_call,
            "function_call_output": self._output,
            "custom_tool_call_output": self._output,
            "local_shell_call": self._action_call("local_shell"),
            "web_search_call": self._action_call("web_search"),
        }

    def read(self, record: dict[str, Any]) -> None:
        kind = record.get("type")
        payload = record.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        inner = payload.get("type")
        if kind == "session_meta":
            self.b.workspace = self.b.workspace or str(payload.get("cwd") or "")
        elif kind == "turn_context":
            self.b.uses_model(payload.get("model"))
            self.b.workspace = self.b.workspace or str(payload.get("cwd") or "")
        elif kind == "response_item" and inner in self.items:
            self.items[str(inner)](payload)
        elif kind == "event_msg" and inner == "token_count":
            self._token_count(payload)
        elif kind == "event_msg" and inner == "turn_aborted":
            self.b.abort_turn(str(payload.get("reason") or "interrupted"))
        elif kind == "event_msg" and inner in _ECHOES:
            return
        elif kind == "compacted":
            self.b.compaction(str(payload.get("message") or ""))
        else:
            unknown(self.b, f"{kind}/{inner}" if inner else str(kind))

    def _message(self, p: dict[str, Any]) -> None:
        role = p.get("role")
        text = text_of(p.get("content"))
        if role == "assistant":
            self.b.assistant(text)
        elif role == "user" and not text.lstrip().startswith(_CONTEXT_PREFIXES):
            self.b.user(text)
        else:
            self.b.warning(
                "import_context", f"codex {role} message of {len(text)} characters not imported"
            )

    def _reasoning(self, p: dict[str, Any]) -> None:
        text = text_of(p.get("summary"))
        if text:
            self.b.reasoning(text)

    def _function_call(self, p: dict[str, Any]) -> None:
        self.b.tool_call(str(p.get("call_id") or ""), str(p.get("name") or ""), p.get("arguments"))

    def _custom_call(self, p: dict[str, Any]) -> None:
        self.b.tool_call(
            str(p.get("call_id") or ""), str(p.get("name") or ""), {"input": p.get("input")}
        )

    def _action_call(self, name: str) -> Callable[[dict[str, Any]], None]:
        def call(p: dict[str, Any]) -> None:
            self.b.tool_call(str(p.get("call_id") or p.get("id") or ""), name, p.get("action"))

        return call

    def _output(self, p: dict[str, Any]) -> None:
        output = p.get("output")
        failed = False
        if isinstance(output, str) and output.startswith("{"):
            output = _shell_output(output)
        if isinstance(output, dict):
            failed = output.get("success") is False or _exit_code(output) not in (0, None)
            output = output.get("content", output.get("output", output))
        self.b.tool_result(str(p.get("call_id") or ""), text_of(output), is_error=failed)

    def _token_count(self, p: dict[str, Any]) -> None:
        info = p.get("info")
        if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict):
            return
        total = info.get("total_token_usage")
        if total is not None and total == self.last_total:
            return
        self.last_total = total
        last = info["last_token_usage"]
        raw = {
            "input_tokens": last.get("input_tokens"),
            "output_tokens": last.get("output_tokens"),
            "input_tokens_details": {"cached_tokens": last.get("cached_input_tokens")},
            "output_tokens_details": {"reasoning_tokens": last.get("reasoning_output_tokens")},
        }
        self.b.usage(normalize_usage(raw))
