"""The boundary between a :class:`ModelRequest` and a request body.

A :class:`RequestCodec` turns one request into the JSON object of one wire
format. It returns a ``dict`` rather than bytes so the HTTP client can adjust
transport-level fields after the fact (drop ``stream_options`` once a relay
has rejected it) without encoding twice; the client encodes the dict once,
with msgspec, so a tool's raw JSON Schema reaches the wire byte for byte.

The codecs here are the **seed**, deliberately minimal and honest about it:
they send the system prompt, the mode instruction, the text of
``user_message`` and ``assistant_text`` items (from ``prefix`` then
``history``), the context instructions after the history, and the tools as
specs. Everything else a real conversation needs is the request-assembly
work that replaces them: history repair and tool-call/result pairing,
reasoning items and the per-model reasoning dialects (only a plain effort
level is passed, where the format has a field for it), images and
attachments, Anthropic cache breakpoints and thinking budgets. Items of any
other type are skipped, not approximated.

Per format:

* chat completions: ``messages`` (system messages first, then the turns,
  then the context instructions as a system message), tools as
  ``{"type": "function", "function": {...}}``, ``max_tokens``,
  ``reasoning_effort``; a streaming body asks for usage with
  ``stream_options.include_usage``.
* responses: ``instructions`` (system prompt and mode instruction),
  ``input`` (the turns, then the context instructions as a developer
  message), flat function tools, ``max_output_tokens``,
  ``reasoning.effort``.
* messages: ``system`` text blocks, the turns, the context instructions
  appended to the last user turn, tools with ``input_schema`` and the
  required ``max_tokens`` (8192 unless given).
"""

from __future__ import annotations

from typing import Any, Protocol

from kun.contracts.items import AssistantText, UserMessage
from kun.contracts.model import ModelRequest, WireFormat

__all__ = [
    "ANTHROPIC_DEFAULT_MAX_TOKENS",
    "ChatCompletionsCodec",
    "MessagesCodec",
    "RequestCodec",
    "ResponsesCodec",
    "codec_for",
]

ANTHROPIC_DEFAULT_MAX_TOKENS = 8192
"""Messages requires ``max_tokens``; this is sent when nothing else says."""

_NOT_A_LEVEL = frozenset({"off", "on"})


class RequestCodec(Protocol):
    """Encodes one request as the JSON object of one wire format.

    ``stream`` says whether the body asks for a stream; ``max_tokens`` and
    ``reasoning_effort`` are already resolved (the request's own value, else
    the client's) and ``None`` leaves the provider's default. The result is a
    fresh ``dict`` the caller may change.
    """

    def encode(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> dict[str, Any]: ...


class ChatCompletionsCodec:
    """Seed codec for chat completions (see the module docstring)."""

    def encode(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": text} for text in _system_texts(request)
        ]
        messages += [{"role": role, "content": text} for role, text in _turns(request)]
        if request.context_instructions:
            messages.append({"role": "system", "content": request.context_instructions})
        body: dict[str, Any] = {"model": model, "messages": messages, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in request.tools
            ]
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if _is_level(reasoning_effort):
            body["reasoning_effort"] = reasoning_effort
        return body


class ResponsesCodec:
    """Seed codec for the Responses API (see the module docstring)."""

    def encode(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> dict[str, Any]:
        items: list[dict[str, Any]] = [
            {"role": role, "content": text} for role, text in _turns(request)
        ]
        if request.context_instructions:
            items.append({"role": "developer", "content": request.context_instructions})
        body: dict[str, Any] = {"model": model, "input": items, "stream": stream}
        instructions = "\n\n".join(_system_texts(request))
        if instructions:
            body["instructions"] = instructions
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }
                for tool in request.tools
            ]
        if max_tokens is not None:
            body["max_output_tokens"] = max_tokens
        if _is_level(reasoning_effort):
            body["reasoning"] = {"effort": reasoning_effort}
        return body


class MessagesCodec:
    """Seed codec for Anthropic Messages (see the module docstring)."""

    def encode(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [
            {"role": role, "content": [{"type": "text", "text": text}]}
            for role, text in _turns(request)
        ]
        if request.context_instructions:
            block = {"type": "text", "text": request.context_instructions}
            if messages and messages[-1]["role"] == "user":
                messages[-1]["content"].append(block)
            else:
                messages.append({"role": "user", "content": [block]})
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "max_tokens": max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS,
            "stream": stream,
        }
        system = [{"type": "text", "text": text} for text in _system_texts(request)]
        if system:
            body["system"] = system
        if request.tools:
            body["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.parameters,
                }
                for tool in request.tools
            ]
        return body


_CODECS: dict[WireFormat, RequestCodec] = {
    "chat_completions": ChatCompletionsCodec(),
    "responses": ResponsesCodec(),
    "messages": MessagesCodec(),
}


def codec_for(format: WireFormat) -> RequestCodec:
    """The seed codec of ``format``."""
    return _CODECS[format]


def _system_texts(request: ModelRequest) -> list[str]:
    return [text for text in (request.system_prompt, request.mode_instruction) if text]


def _turns(request: ModelRequest) -> list[tuple[str, str]]:
    """``(role, text)`` of every text turn in ``prefix`` then ``history``."""
    turns: list[tuple[str, str]] = []
    for item in (*request.prefix, *request.history):
        if isinstance(item, UserMessage) and item.text:
            turns.append(("user", item.text))
        elif isinstance(item, AssistantText) and item.text:
            turns.append(("assistant", item.text))
    return turns


def _is_level(effort: str | None) -> bool:
    return bool(effort) and effort not in _NOT_A_LEVEL
