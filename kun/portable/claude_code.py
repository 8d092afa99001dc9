"""Claude Code sessions (``~/.claude/projects/<project>/<session id>.jsonl``).

Each line is one record. What is read:

- every record: ``sessionId`` (the session id, the thread id's source; the
  file's name if no record has one), ``cwd`` (the workspace: the first one
  seen), ``timestamp`` (ISO-8601). ``uuid``/``parentUuid`` are not needed:
  records are taken in file order, which is the order they were written.
- ``type: "user"``: ``message.content`` is a string (a user message, which
  opens a turn) or a list of blocks: ``text`` (joined into one user
  message), ``tool_result`` (``tool_use_id``, ``content`` a string or text
  blocks, ``is_error``).
- ``type: "assistant"``: ``message.model``, ``message.content`` blocks
  ``text``, ``thinking`` (``thinking``, ``signature``), ``tool_use`` (``id``,
  ``name``, ``input``); ``message.usage`` (Anthropic's: ``input_tokens``,
  ``output_tokens``, ``cache_read_input_tokens``,
  ``cache_creation_input_tokens``) counted once per ``message.id``: Claude
  Code writes one record per content block, each repeating the usage.
  The model ``<synthetic>`` marks messages Claude Code made up itself: their
  usage is not a model call and is not counted.
- ``type: "summary"``: ``summary`` becomes the thread's title.
- ``type: "system"``: ``content`` is kept as a ``claude_code_system`` warning.

Any other record type or content block becomes an ``import_unknown_record``
warning naming it. A file with no ``user`` or ``assistant`` record whose
``message`` is an object with a ``content`` is refused: it is no Claude Code
session, and importing it would make a thread of nothing but warnings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kun.contracts.events import Event
from kun.model.usage import normalize_usage
from kun.portable.builder import SessionBuilder
from kun.portable.errors import SourceRefused
from kun.portable.reading import epoch_ms, text_of, unknown, unreadable
from kun.portable.sessions import Record, session_thread_id

__all__ = ["import_claude_code"]

_SYNTHETIC = "<synthetic>"


def import_claude_code(path: Path, records: list[Record]) -> list[Event]:
    if not any(_message_record(r) for _, r in records):
        raise SourceRefused(path, "no user or assistant message record: not a Claude Code session")
    session_id = next(
        (r["sessionId"] for _, r in records if isinstance(r, dict) and _str(r.get("sessionId"))),
        path.stem,
    )
    builder = SessionBuilder(session_thread_id("claude-code", session_id), provider="anthropic")
    counted: set[str] = set()
    for number, record in records:
        if not isinstance(record, dict):
            unreadable(builder, number)
            continue
        builder.clock(epoch_ms(record.get("timestamp")))
        builder.workspace = builder.workspace or _str(record.get("cwd"))
        kind = record.get("type")
        message = record.get("message")
        message = message if isinstance(message, dict) else {}
        if kind == "user":
            _user(builder, message.get("content"))
        elif kind == "assistant":
            _assistant(builder, message, counted)
        elif kind == "summary":
            builder.title = _str(record.get("summary")) or builder.title
            builder.title_auto = False
        elif kind == "system":
            builder.warning("claude_code_system", text_of(record.get("content")))
        else:
            unknown(builder, str(kind))
    return builder.finish()


def _message_record(record: object) -> bool:
    return (
        isinstance(record, dict)
        and record.get("type") in ("user", "assistant")
        and isinstance(message := record.get("message"), dict)
        and "content" in message
    )


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _user(builder: SessionBuilder, content: object) -> None:
    if isinstance(content, str):
        builder.user(content)
        return
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(_str(block.get("text")))
        elif kind == "tool_result":
            builder.tool_result(
                _str(block.get("tool_use_id")),
                text_of(block.get("content")),
                is_error=block.get("is_error") is True,
            )
        else:
            unknown(builder, f"user/{kind}")
    if texts:
        builder.user("\n\n".join(texts))


def _assistant(builder: SessionBuilder, message: dict[str, Any], counted: set[str]) -> None:
    model = _str(message.get("model"))
    if model != _SYNTHETIC:
        builder.uses_model(model)
    content = message.get("content")
    if isinstance(content, str):
        builder.assistant(content)
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            builder.assistant(_str(block.get("text")))
        elif kind == "thinking":
            builder.reasoning(_str(block.get("thinking")), _str(block.get("signature")) or None)
        elif kind == "tool_use":
            builder.tool_call(_str(block.get("id")), _str(block.get("name")), block.get("input"))
        else:
            unknown(builder, f"assistant/{kind}")
    usage = message.get("usage")
    message_id = _str(message.get("id"))
    if isinstance(usage, dict) and model != _SYNTHETIC and message_id not in counted:
        if message_id:
            counted.add(message_id)
        builder.usage(normalize_usage(usage), model or None)
