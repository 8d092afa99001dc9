"""The Claude Agent SDK's messages, shadowed: plain dataclasses of the fields
kun reads, and :func:`from_sdk`, which converts the SDK's own objects.

The SDK is an optional extra (``kun[claude]``) that brings a large
platform-specific ``claude`` binary; the mapper and its tests must run
where it is not installed. So nothing here imports it: :func:`from_sdk`
reads the real objects by their class name and attributes (the SDK's
message classes are dataclasses with these names and fields, see
``claude_agent_sdk.types``). A message kun has no use for (rate-limit
notices, mirror errors, …) converts to ``None`` and is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AssistantMessage",
    "ContentBlock",
    "ResultMessage",
    "SdkMessage",
    "StreamEvent",
    "SystemMessage",
    "TextBlock",
    "ThinkingBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "UserMessage",
    "from_sdk",
]


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ThinkingBlock:
    thinking: str
    signature: str = ""


@dataclass(frozen=True)
class ToolUseBlock:
    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolResultBlock:
    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None


ContentBlock = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True)
class AssistantMessage:
    """One assistant message; the CLI sends one per finished content block
    (blocks of one API message share ``message_id``)."""

    content: list[ContentBlock]
    model: str = ""
    parent_tool_use_id: str | None = None
    error: str | None = None
    message_id: str | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class UserMessage:
    """A user turn the CLI echoes: tool results, or a prompt (a string)."""

    content: str | list[ContentBlock]
    parent_tool_use_id: str | None = None


@dataclass(frozen=True)
class SystemMessage:
    """``subtype`` ``init`` carries ``session_id`` in ``data``."""

    subtype: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResultMessage:
    """The end of one query: usage of the whole query, its cost, outcome."""

    subtype: str
    is_error: bool
    session_id: str
    duration_ms: int = 0
    num_turns: int = 0
    stop_reason: str | None = None
    total_cost_usd: float | None = None
    usage: dict[str, Any] | None = None
    result: str | None = None
    errors: list[str] | None = None
    terminal_reason: str | None = None
    api_error_status: int | None = None


@dataclass(frozen=True)
class StreamEvent:
    """A raw Anthropic stream event (``include_partial_messages``)."""

    event: dict[str, Any]
    session_id: str = ""
    uuid: str = ""
    parent_tool_use_id: str | None = None


SdkMessage = AssistantMessage | UserMessage | SystemMessage | ResultMessage | StreamEvent


def from_sdk(message: object) -> SdkMessage | None:
    """The shadow of one of the SDK's message objects; ``None`` for kinds
    kun does not read. System messages of every subclass (task
    notifications, hook events) convert to :class:`SystemMessage`."""
    names = {cls.__name__ for cls in type(message).__mro__}
    get = getattr
    if "AssistantMessage" in names:
        return AssistantMessage(
            content=_blocks(get(message, "content", [])),
            model=get(message, "model", "") or "",
            parent_tool_use_id=get(message, "parent_tool_use_id", None),
            error=get(message, "error", None),
            message_id=get(message, "message_id", None),
            session_id=get(message, "session_id", None),
        )
    if "UserMessage" in names:
        content = get(message, "content", "")
        return UserMessage(
            content=content if isinstance(content, str) else _blocks(content),
            parent_tool_use_id=get(message, "parent_tool_use_id", None),
        )
    if "ResultMessage" in names:
        return ResultMessage(
            subtype=get(message, "subtype", ""),
            is_error=bool(get(message, "is_error", False)),
            session_id=get(message, "session_id", "") or "",
            duration_ms=get(message, "duration_ms", 0) or 0,
            num_turns=get(message, "num_turns", 0) or 0,
            stop_reason=get(message, "stop_reason", None),
            total_cost_usd=get(message, "total_cost_usd", None),
            usage=get(message, "usage", None),
            result=get(message, "result", None),
            errors=get(message, "errors", None),
            terminal_reason=get(message, "terminal_reason", None),
            api_error_status=get(message, "api_error_status", None),
        )
    if "StreamEvent" in names:
        return StreamEvent(
            event=get(message, "event", {}) or {},
            session_id=get(message, "session_id", "") or "",
            uuid=get(message, "uuid", "") or "",
            parent_tool_use_id=get(message, "parent_tool_use_id", None),
        )
    if "SystemMessage" in names:
        return SystemMessage(
            subtype=get(message, "subtype", ""), data=dict(get(message, "data", {}) or {})
        )
    return None


def _blocks(blocks: object) -> list[ContentBlock]:
    """The content blocks kun reads; server-side tool blocks are dropped
    (the API ran them, and their results come back as text)."""
    converted: list[ContentBlock] = []
    for block in blocks if isinstance(blocks, list) else []:
        name = type(block).__name__
        if name == "TextBlock":
            converted.append(TextBlock(text=block.text))
        elif name == "ThinkingBlock":
            converted.append(
                ThinkingBlock(thinking=block.thinking, signature=block.signature or "")
            )
        elif name == "ToolUseBlock":
            converted.append(ToolUseBlock(id=block.id, name=block.name, input=dict(block.input)))
        elif name == "ToolResultBlock":
            converted.append(
                ToolResultBlock(
                    tool_use_id=block.tool_use_id, content=block.content, is_error=block.is_error
                )
            )
    return converted
