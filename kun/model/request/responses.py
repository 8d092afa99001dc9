"""The OpenAI Responses body.

``{model, stream, max_output_tokens?, reasoning?, instructions?, tools?, input}``
with ``input`` last, so two requests of one turn share their bytes up to the
end of the earlier history.

* The leading system messages (system prompt, persona, project context,
  mode instruction) become ``instructions``, joined by a blank line; a late one (the context
  instructions) is a ``developer`` message at its place in ``input``.
* A user message is ``{role: user, content}``: a string when it is only
  text, else ``input_text`` and ``input_image`` (data URL) parts.
* An assistant message becomes ``{role: assistant, content: <text>}`` for
  its text, then one ``function_call`` item per call (``call_id`` and name
  mapped by :mod:`.wire_ids`, ``arguments`` as the JSON text). Reasoning is
  not sent back: kun keeps no Responses reasoning item id or encrypted
  content, and the API accepts a history without them.
* A tool output is a ``function_call_output``; images of the outputs of one
  assistant message follow them in one synthetic user message.
* Tools are flat: ``{type: function, name, description, parameters,
  strict: false}`` (``strict`` would otherwise require every schema to be
  closed and fully required); omitted when there are none.
"""

from __future__ import annotations

from typing import Any

from kun.contracts.model import ModelRequest
from kun.model.body import RequestBody
from kun.model.request.base import (
    BaseCodec,
    EncodedWireItems,
    WireItems,
    openai_content,
    split_leading_system,
)
from kun.model.request.chat_completions import tool_images_intro
from kun.model.request.images import Image
from kun.model.request.kimi import is_builtin
from kun.model.request.messages import Assistant, Call, Message, System, Text, ToolOutput, User
from kun.model.request.reasoning import responses_reasoning
from kun.model.request.wire_ids import ID_RULES

__all__ = ["ResponsesCodec"]


class ResponsesCodec(BaseCodec):
    """Encodes a request as a Responses body (see the module docstring)."""

    ids = ID_RULES["responses"]

    def encode(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> dict[str, Any]:
        body, rest = self._head(
            request, self.messages(request), model, stream, max_tokens, reasoning_effort
        )
        body["input"] = wire_input(rest)
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
        """:meth:`encode` as pieces (:mod:`kun.model.body`)."""
        messages, encoded = self.messages_and_items(request)
        head, rest = self._head(request, messages, model, stream, max_tokens, reasoning_effort)
        return RequestBody(head, "input", _wire(rest, EncodedWireItems(encoded)))

    def _head(
        self,
        request: ModelRequest,
        messages: list[Message],
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> tuple[dict[str, Any], list[Message]]:
        """Every field but ``input``, and the messages ``input`` is made of."""
        body: dict[str, Any] = {"model": model, "stream": stream}
        if max_tokens is not None:
            body["max_output_tokens"] = max_tokens
        body.update(responses_reasoning(self.capabilities, reasoning_effort, self.endpoint_url))
        instructions, rest = split_leading_system(messages)
        if instructions:
            body["instructions"] = "\n\n".join(instructions)
        if tools := [tool for tool in request.tools if not is_builtin(tool.name)]:
            body["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                    "strict": False,
                }
                for tool in tools
            ]
        return body, rest


def wire_input(messages: list[Message]) -> list[dict[str, Any]]:
    """The ``input`` items of ``messages`` (leading system messages removed)."""
    items: list[dict[str, Any]] = _wire(messages, WireItems())
    return items


def _wire(messages: list[Message], wire: WireItems) -> list[Any]:
    images: list[dict[str, Any]] = []
    for message in messages:
        if images and not isinstance(message, ToolOutput):
            wire.extra([{"role": "user", "content": images}])
            images = []
        if isinstance(message, System):
            wire.add(message, _developer)
        elif isinstance(message, User):
            wire.add(message, _user)
        elif isinstance(message, Assistant):
            wire.add(message, _assistant)
        else:
            wire.add(message, _output)
            if message.images:
                images.append({"type": "input_text", "text": tool_images_intro(message)})
                images += (_image_part(image) for image in message.images)
    if images:
        wire.extra([{"role": "user", "content": images}])
    return wire.out


def _developer(message: System) -> list[dict[str, Any]]:
    return [{"role": "developer", "content": message.text}]


def _user(message: User) -> list[dict[str, Any]]:
    return [{"role": "user", "content": _content(message.content)}]


def _output(output: ToolOutput) -> list[dict[str, Any]]:
    return [{"type": "function_call_output", "call_id": output.call_id, "output": output.text}]


def _assistant(message: Assistant) -> list[dict[str, Any]]:
    """A step's text as one assistant message, then its function calls: the
    calls must be the last items before their outputs, so text the model
    wrote after a call is moved ahead of the calls."""
    text = [part.text for part in message.content if isinstance(part, Text)]
    items: list[dict[str, Any]] = []
    if text:
        items.append({"role": "assistant", "content": "\n\n".join(text)})
    items += (
        {
            "type": "function_call",
            "call_id": part.call_id,
            "name": part.name,
            "arguments": part.arguments_json,
        }
        for part in message.content
        if isinstance(part, Call)
    )
    return items


def _content(parts: tuple[Text | Image, ...]) -> str | list[dict[str, Any]]:
    return openai_content(parts, "input_text", _image_part)


def _image_part(image: Image) -> dict[str, Any]:
    return {"type": "input_image", "image_url": image.data_url}
