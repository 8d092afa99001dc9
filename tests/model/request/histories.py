"""Item histories and model settings the request tests encode.

Each :class:`Case` is one history with the request around it; the golden
tests encode every case in every wire format (``golden/<case>.<format>.json``).
Item builders here are small and explicit so a history reads like the log it
stands for.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.items import (
    AssistantReasoning,
    AssistantText,
    Attachment,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.contracts.model import ModelRequest, ToolSpec, WireFormat
from kun.model.request_codec import RequestCodec, codec_for

FORMATS: tuple[WireFormat, ...] = ("chat_completions", "responses", "messages", "gemini")
ID_FORMATS: tuple[WireFormat, ...] = ("chat_completions", "responses", "messages")
"""The formats that send call ids (Gemini pairs calls by name and order)."""
MODEL = {
    "chat_completions": "gpt-test",
    "responses": "gpt-test",
    "messages": "claude-test",
    "gemini": "gemini-test",
}


def png(width: int, height: int) -> bytes:
    """A valid, deterministic PNG of ``width`` x ``height`` grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


SCREENSHOT = Attachment(name="screen.png", mime_type="image/png", path="/tmp/kun/screen.png")
DIAGRAM = Attachment(name="diagram.jpg", mime_type="image/jpeg", path="/tmp/kun/diagram.jpg")
"""Declared a JPEG; its bytes are a PNG, and the PNG type is what is sent."""
FILES = {SCREENSHOT.path: png(3, 2), DIAGRAM.path: png(2, 2)}


def load(attachment: Attachment) -> bytes:
    if attachment.path not in FILES:
        raise FileNotFoundError(2, "No such file or directory")
    return FILES[attachment.path]


READ_SCHEMA = b'{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}'
TOOLS = (
    ToolSpec(name="read_file", description="Read a file.", parameters=msgspec.Raw(READ_SCHEMA)),
    ToolSpec(name="grep", description="Search files."),
)

TEXT_ONLY = ModelCapabilities(known=True, tool_use=True, input_modalities=("text",))
VISION = ModelCapabilities(known=True, tool_use=True, input_modalities=("text", "image"))
DEEPSEEK_THINKING = ModelCapabilities(
    known=True,
    tool_use=True,
    reasoning=True,
    reasoning_protocol="deepseek-chat-completions",
    reasoning_history="required",
)
OPENAI_REASONING = ModelCapabilities(
    known=True, tool_use=True, reasoning=True, reasoning_protocol="openai-responses"
)
GEMINI_THINKING = ModelCapabilities(
    known=True,
    tool_use=True,
    reasoning=True,
    reasoning_protocol="gemini-thinking",
    input_modalities=("text", "image"),
    max_output_tokens=65536,
)
CLAUDE_THINKING = ModelCapabilities(
    known=True,
    tool_use=True,
    reasoning=True,
    reasoning_protocol="anthropic-thinking",
    input_modalities=("text", "image"),
    max_output_tokens=64000,
)


def user(n: int, text: str, **fields: Any) -> UserMessage:
    return UserMessage(id=f"u{n}", text=text, **fields)


def say(n: int, text: str, **fields: Any) -> AssistantText:
    return AssistantText(id=f"a{n}", text=text, **fields)


def think(n: int, text: str, signature: str | None = None) -> AssistantReasoning:
    return AssistantReasoning(id=f"r{n}", text=text, signature=signature)


def call(call_id: str, name: str = "read_file", **arguments: Any) -> ToolCall:
    raw = msgspec.json.encode(arguments or {"path": "README.md"})
    return ToolCall(id=f"tc-{call_id}", call_id=call_id, name=name, arguments=msgspec.Raw(raw))


def result(call_id: str, output: str, name: str = "read_file", **fields: Any) -> ToolResult:
    return ToolResult(id=f"res-{call_id}", call_id=call_id, name=name, output=output, **fields)


@dataclass(frozen=True)
class Case:
    """One history and the request around it. ``capabilities`` and
    ``endpoint`` are per format when a case needs a format's own model."""

    history: tuple[Item, ...]
    context: str | None = None
    attachments: tuple[Attachment, ...] = ()
    capabilities: dict[str, ModelCapabilities] = field(default_factory=dict)
    endpoint: dict[str, str] = field(default_factory=dict)
    effort: str | None = None
    system: str = "You are kun, a coding agent."
    persona: str | None = None
    mode: str | None = None

    def request(self) -> ModelRequest:
        return ModelRequest(
            system_prompt=self.system,
            persona=self.persona,
            mode_instruction=self.mode,
            history=self.history,
            context_instructions=self.context,
            tools=TOOLS,
            attachments=self.attachments,
        )

    def codec(self, fmt: WireFormat) -> RequestCodec:
        return codec_for(
            fmt,
            capabilities=self.capabilities.get(fmt, TEXT_ONLY),
            endpoint_url=self.endpoint.get(fmt),
            load_attachment=load,
        )

    def encode(self, fmt: WireFormat) -> dict[str, Any]:
        return self.codec(fmt).encode(
            self.request(),
            model=MODEL[fmt],
            stream=True,
            max_tokens=None,
            reasoning_effort=self.effort,
        )


def _all(capabilities: ModelCapabilities) -> dict[str, ModelCapabilities]:
    return dict.fromkeys(FORMATS, capabilities)


ASK = user(1, "What does src/app.py do?")
MULTI_STEP = (
    ASK,
    say(1, "Let me read it."),
    call("call_1", path="src/app.py"),
    result("call_1", "def main():\n    serve()\n"),
    call("call_2", "grep", pattern="def serve"),
    result("call_2", "src/server.py:12:def serve():", name="grep"),
    say(2, "It starts the server defined in src/server.py."),
)

CASES: dict[str, Case] = {
    "plain_chat": Case(
        history=(user(1, "Hi"), say(1, "Hello! How can I help?"), user(2, "What is 2 + 2?")),
    ),
    "multi_step_tools": Case(history=MULTI_STEP),
    "parallel_tool_calls": Case(
        history=(
            ASK,
            say(1, "Reading three files at once."),
            call("call_a", path="a.py"),
            call("call_b", path="b.py"),
            call("call_c", path="c.py"),
            result("call_b", "B"),
            result("call_a", "A"),
            result("call_c", "", is_error=True, code="not_found"),
        ),
    ),
    "missing_tool_result": Case(
        history=(
            ASK,
            say(1, "Reading two files."),
            call("call_1", path="a.py"),
            call("call_2", path="b.py"),
            result("call_1", "A"),
            user(2, "Never mind, just summarize."),
        ),
    ),
    "orphan_tool_result": Case(
        history=(
            ASK,
            result("call_lost", "output of a call that is not in the history"),
            say(1, "It defines main()."),
            user(2, "Thanks."),
        ),
    ),
    "reasoning_thinking_mode": Case(
        history=(
            ASK,
            think(1, "I should read the file first.", signature="sig-1"),
            say(1, "Reading it."),
            call("call_1", path="src/app.py"),
            result("call_1", "def main(): ..."),
            call("call_2", "grep", pattern="serve"),
            result("call_2", "src/server.py:12", name="grep"),
            think(3, "Enough context now.", signature="sig-3"),
            say(3, "It starts the server."),
            user(2, "And the tests?"),
        ),
        capabilities={
            "chat_completions": DEEPSEEK_THINKING,
            "responses": OPENAI_REASONING,
            "messages": CLAUDE_THINKING,
        },
        endpoint={"chat_completions": "https://api.deepseek.com/v1"},
        effort="high",
    ),
    "steering_mid_turn": Case(
        history=(
            ASK,
            say(1, "Reading it."),
            call("call_1", path="src/app.py"),
            user(2, "Also check the tests.", steered=True),
            result("call_1", "def main(): ..."),
        ),
    ),
    "image_on_last_user_message": Case(
        history=(user(1, "Hi"), say(1, "Hello."), user(2, "What is in this picture?")),
        attachments=(DIAGRAM,),
        capabilities=_all(VISION),
    ),
    "image_fallback_text_only": Case(
        history=(user(1, "What is in this picture?"),),
        attachments=(SCREENSHOT,),
    ),
    "tool_result_image": Case(
        history=(
            user(1, "Take a screenshot."),
            call("call_1", "screenshot", region="full"),
            result("call_1", "Captured the screen.", name="screenshot", attachments=(SCREENSHOT,)),
        ),
        capabilities=_all(VISION),
    ),
    "tool_result_image_text_only": Case(
        history=(
            user(1, "Take a screenshot."),
            call("call_1", "screenshot", region="full"),
            result("call_1", "Captured the screen.", name="screenshot", attachments=(SCREENSHOT,)),
        ),
    ),
    "context_instructions": Case(
        history=(user(1, "Add a --since flag."),),
        persona="You are terse.",
        mode="Plan mode: propose a plan, change nothing.",
        context="<thread_todos>\n- [ ] parse --since\n</thread_todos>",
    ),
    "late_system_message": Case(
        history=MULTI_STEP[:-1],
        context="Goal: explain src/app.py. Budget: 200k tokens.",
    ),
}
