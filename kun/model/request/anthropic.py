"""The Anthropic Messages body (also DeepSeek's and other ``/anthropic`` relays).

``{model, max_tokens, stream, thinking?, tools?, system?, messages}`` with
``messages`` last.

* ``system``: the leading system messages as text blocks. A system message
  that appears after the conversation started (the context instructions) is
  appended as a text block to the user turn at the end — a new user turn if
  the conversation ends with the assistant.
* Roles alternate, starting with ``user``: consecutive messages of one role
  are merged into one turn, and a conversation that would start with the
  assistant gets a one-line user turn first.
* The ``tool_result`` blocks answering one assistant turn are grouped in ONE
  user turn, first in it (DeepSeek's ``/anthropic`` refuses results split
  over several user messages, Anthropic wants them before any text); images
  of tool outputs follow them there as sibling ``image`` blocks, each group
  introduced by a line naming its call; then any user text.
* Thinking: with thinking on (:func:`~.reasoning.anthropic_thinking`),
  assistant turns carry their signed ``thinking`` blocks (unsigned reasoning
  from other providers cannot be verified and is dropped; with DeepSeek's
  protocol every reasoning block goes back, signed or not). Anthropic insists
  that the assistant's final turn — every assistant message since the last
  user turn that is not only tool results — starts with a thinking block
  when it is using tools. An assistant message that opens with signed
  thinking is therefore never merged onto the assistant turn before it (an
  answer whose next user message was blank, a step whose calls were
  dropped): a one-line user turn (:data:`CONTINUE_TURN`) closes that turn
  first, so the step that opens the final turn keeps it thinking. When the
  final turn still does not start with thinking (its reasoning came from
  another model, or was lost), the request is sent with thinking off rather
  than refused. With thinking off no thinking block is sent, and a thinking block
  is never the last block of an assistant message. DeepSeek's endpoint in
  thinking mode wants the opposite: every assistant turn that uses tools
  must carry a thinking block ("Missing thinking block in the assistant
  message"), so one that has none (a step by another model, or from before
  thinking was on) gets an empty one first, as the chat codec sends
  ``reasoning_content: " "`` for the same rule.
* A final assistant turn (the history ends with the model's answer, e.g. a
  blank user message dropped from an old log) is a prefill to Anthropic,
  which refuses trailing whitespace there: its last text is stripped. A
  prefill is refused with thinking on, so such a request is sent with
  thinking off (DeepSeek's endpoint: ``thinking: {type: disabled}``).
* A history with nothing left to send (its only user message was blank)
  still sends one user turn, :data:`EMPTY_CONVERSATION`: Anthropic refuses
  a body without messages.
* Cache: three ``cache_control`` breakpoints — the last system block, and
  the last cacheable block (not thinking, not the per-request context text)
  of the last two turns that have one. :func:`cache_breakpoints` counts every
  breakpoint (tools, system, messages); the body never carries more than 4.
* ``max_tokens`` is required: the caller's, else 8192, or 32768 with thinking.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from kun.contracts.model import ModelRequest
from kun.model.body import RequestBody, encode_item
from kun.model.request.base import BaseCodec, split_leading_system
from kun.model.request.chat_completions import tool_images_intro
from kun.model.request.images import Image
from kun.model.request.kimi import is_builtin
from kun.model.request.messages import (
    Assistant,
    Call,
    Message,
    Reasoning,
    System,
    Text,
    ToolOutput,
    User,
)
from kun.model.request.reasoning import anthropic_thinking
from kun.model.request.wire_ids import ID_RULES

__all__ = [
    "CACHE_BREAKPOINT_LIMIT",
    "CONTINUE_TURN",
    "EMPTY_CONVERSATION",
    "FIRST_USER_TURN",
    "MessagesCodec",
    "cache_breakpoints",
]

CACHE_BREAKPOINT_LIMIT = 4
FIRST_USER_TURN = "(earlier conversation omitted)"
"""The user turn put before a conversation that starts with the assistant."""
CONTINUE_TURN = "(continue)"
"""The user turn put between an assistant turn and a message opening with
signed thinking, which must start its own turn."""
EMPTY_CONVERSATION = "(empty message)"
"""The user turn of a body that would otherwise carry no message."""

_EPHEMERAL = {"type": "ephemeral"}
_THINKING = frozenset({"thinking", "redacted_thinking"})
_NO_THINKING: dict[str, Any] = {"type": "thinking", "thinking": ""}
"""DeepSeek's stand-in for a tool-using turn without reasoning; its endpoint
accepts empty thinking text."""
ThinkingBlocks = Literal["none", "signed", "all"]


class _Turn:
    __slots__ = ("blocks", "role", "sources", "volatile")

    def __init__(self, role: str) -> None:
        self.role = role
        self.blocks: list[dict[str, Any]] = []
        self.volatile = 0
        """How many trailing blocks are per-request text (never cached)."""
        self.sources: list[Message] = []
        """The messages the blocks come from (none: kun's own text)."""


class MessagesCodec(BaseCodec):
    """Encodes a request as an Anthropic Messages body (see the module docstring)."""

    ids = ID_RULES["messages"]

    def encode(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> dict[str, Any]:
        body, turns, _ = self._turns(
            request, self.messages(request), model, stream, max_tokens, reasoning_effort
        )
        body["messages"] = [_turn_dict(turn) for turn in turns]
        return body

    def encode_body(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> RequestBody:
        """:meth:`encode` as pieces (:mod:`kun.model.body`). A turn's bytes
        depend only on its messages and the thinking mode, except those of
        the last turn and of turns carrying a breakpoint: every other turn
        made of the history's messages is encoded once."""
        messages, encoded = self.messages_and_items(request)
        head, turns, mode = self._turns(
            request, messages, model, stream, max_tokens, reasoning_effort
        )
        items: list[bytes] = []
        for n, turn in enumerate(turns):
            if not turn.sources or n == len(turns) - 1 or _marked(turn):
                items.append(encode_item(_turn_dict(turn)))
                continue
            first, *rest = turn.sources
            items += encoded.items(first, partial(_turn_items, turn), (mode, *rest))
        return RequestBody(head, "messages", items)

    def _turns(
        self,
        request: ModelRequest,
        messages: list[Message],
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> tuple[dict[str, Any], list[_Turn], ThinkingBlocks]:
        """Every field but ``messages``, the turns, and the thinking mode
        they were built in."""
        plan = anthropic_thinking(
            self.capabilities, reasoning_effort, self.endpoint_url, max_tokens
        )
        system, rest = split_leading_system(messages)
        mode: ThinkingBlocks = "none"
        if plan.enabled:
            deepseek = self.capabilities.reasoning_protocol == "deepseek-chat-completions"
            mode = "all" if deepseek else "signed"
        turns = _build_turns(rest, mode)
        thinking = plan.thinking
        prefill = turns[-1].role == "assistant"
        unsigned = mode == "signed" and not _final_turn_thinks_first(turns)
        if unsigned or (mode != "none" and prefill):
            turns, thinking = _build_turns(rest, "none"), _thinking_off(mode)
            mode = "none"
        body: dict[str, Any] = {"model": model, "max_tokens": plan.max_tokens, "stream": stream}
        if thinking is not None:
            body["thinking"] = thinking
        if tools := [tool for tool in request.tools if not is_builtin(tool.name)]:
            body["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                }
                for tool in tools
            ]
        if system:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in system]
            blocks[-1]["cache_control"] = dict(_EPHEMERAL)
            body["system"] = blocks
        _mark_last_turns(turns, CACHE_BREAKPOINT_LIMIT - cache_breakpoints(body))
        return body, turns, mode


def _turn_dict(turn: _Turn) -> dict[str, Any]:
    return {"role": turn.role, "content": turn.blocks}


def _turn_items(turn: _Turn) -> list[dict[str, Any]]:
    return [_turn_dict(turn)]


def _marked(turn: _Turn) -> bool:
    return any("cache_control" in block for block in turn.blocks)


def _build_turns(messages: list[Message], thinking: ThinkingBlocks) -> list[_Turn]:
    """Alternating turns of ``messages`` (leading system messages removed)."""
    turns: list[_Turn] = []
    images: list[dict[str, Any]] = []

    def add(
        role: str,
        blocks: list[dict[str, Any]],
        source: Message | None = None,
        volatile: bool = False,
    ) -> None:
        if not blocks:
            return
        if not turns or turns[-1].role != role:
            turns.append(_Turn(role))
        turn = turns[-1]
        turn.blocks += blocks
        turn.volatile = turn.volatile + len(blocks) if volatile else 0
        if source is not None:
            turn.sources.append(source)

    for message in messages:
        if images and not isinstance(message, ToolOutput):
            add("user", images)
            images = []
        if isinstance(message, System):
            add("user", [{"type": "text", "text": message.text}], message, volatile=True)
        elif isinstance(message, User):
            add("user", [_part(part) for part in message.content], message)
        elif isinstance(message, Assistant):
            blocks = _assistant(message, thinking)
            opens_signed = thinking == "signed" and bool(blocks) and blocks[0]["type"] in _THINKING
            if opens_signed and turns and turns[-1].role == "assistant":
                add("user", [{"type": "text", "text": CONTINUE_TURN}])
            add("assistant", blocks, message)
        else:
            add("user", [_tool_result(message)], message)
            if message.images:
                images.append({"type": "text", "text": tool_images_intro(message)})
                images += (_image(image) for image in message.images)
    add("user", images)
    _finish(turns, thinking)
    return turns


def _finish(turns: list[_Turn], thinking: ThinkingBlocks) -> None:
    """No assistant turn ends with thinking; DeepSeek's tool-using turns
    start with it; no prefill ends with whitespace; the user speaks first."""
    for turn in turns:
        while turn.role == "assistant" and turn.blocks and turn.blocks[-1]["type"] in _THINKING:
            turn.blocks.pop()
        if thinking == "all" and turn.role == "assistant" and _lacks_thinking(turn):
            turn.blocks.insert(0, dict(_NO_THINKING))
    _end_without_whitespace(turns)
    if not turns or turns[0].role == "assistant":
        first = _Turn("user")
        first.blocks.append(
            {"type": "text", "text": FIRST_USER_TURN if turns else EMPTY_CONVERSATION}
        )
        turns.insert(0, first)


def _thinking_off(mode: ThinkingBlocks) -> dict[str, Any] | None:
    """The ``thinking`` field of a request sent with thinking off: DeepSeek's
    endpoint thinks unless told not to."""
    return {"type": "disabled"} if mode == "all" else None


def _lacks_thinking(turn: _Turn) -> bool:
    """A tool-using assistant turn with no thinking block."""
    types = [block["type"] for block in turn.blocks]
    return "tool_use" in types and not _THINKING.intersection(types)


def _end_without_whitespace(turns: list[_Turn]) -> None:
    """Strip the end of a final assistant turn (a prefill), dropping what is
    left blank."""
    while turns and turns[-1].role == "assistant":
        blocks = turns[-1].blocks
        while blocks and blocks[-1]["type"] == "text":
            text = blocks[-1]["text"].rstrip()
            if text:
                blocks[-1] = {**blocks[-1], "text": text}
                return
            blocks.pop()
        while blocks and blocks[-1]["type"] in _THINKING:
            blocks.pop()
        if blocks:
            return
        turns.pop()


def cache_breakpoints(body: dict[str, Any]) -> int:
    """How many ``cache_control`` breakpoints ``body`` carries, everywhere."""
    count = sum("cache_control" in tool for tool in body.get("tools", ()))
    count += sum("cache_control" in block for block in body.get("system", ()))
    for message in body.get("messages", ()):
        content = message["content"]
        if isinstance(content, list):
            count += sum("cache_control" in block for block in content)
    return count


def _mark_last_turns(turns: list[_Turn], budget: int) -> None:
    """Breakpoints on the last cacheable block of the last two turns that
    have one, within ``budget``."""
    marks = min(2, budget)
    for turn in reversed(turns):
        if marks <= 0:
            return
        for block in reversed(turn.blocks[: len(turn.blocks) - turn.volatile]):
            if block["type"] not in _THINKING:
                block["cache_control"] = dict(_EPHEMERAL)
                marks -= 1
                break


def _final_turn_thinks_first(turns: list[_Turn]) -> bool:
    """Whether the assistant's final turn, if it is using tools, starts with
    a thinking block. That turn spans every assistant message since the last
    user turn that answers no tool call: a tool loop continues one turn (the
    steps after the first usually carry no thinking of their own)."""
    first: _Turn | None = None
    uses_tools = False
    for turn in reversed(turns):
        if turn.role == "assistant":
            first = turn
            uses_tools = uses_tools or any(b["type"] == "tool_use" for b in turn.blocks)
        elif not any(block["type"] == "tool_result" for block in turn.blocks):
            break
    if first is None or not uses_tools:
        return True
    return first.blocks[0]["type"] in _THINKING


def _assistant(message: Assistant, thinking: ThinkingBlocks) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, Reasoning):
            if thinking == "all" or (thinking == "signed" and part.signature):
                block = {"type": "thinking", "thinking": part.text}
                if part.signature:
                    block["signature"] = part.signature
                blocks.append(block)
        elif isinstance(part, Text):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, Call):
            blocks.append(
                {"type": "tool_use", "id": part.call_id, "name": part.name, "input": part.arguments}
            )
    return blocks


def _tool_result(output: ToolOutput) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": output.call_id,
        "content": output.text,
    }
    if output.is_error:
        block["is_error"] = True
    return block


def _part(part: Text | Image) -> dict[str, Any]:
    return {"type": "text", "text": part.text} if isinstance(part, Text) else _image(part)


def _image(image: Image) -> dict[str, Any]:
    source = {"type": "base64", "media_type": image.media_type, "data": image.data}
    return {"type": "image", "source": source}
