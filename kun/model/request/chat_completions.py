"""The chat completions body: OpenAI's format and every compatible server's.

``{model, stream, stream_options?, max_tokens?, <reasoning>, tools?, messages}``
with ``messages`` last, so two requests of one turn share their bytes up to
the end of the earlier history.

* System messages stay ``system`` messages, leading or late (the context
  instructions are the last message).
* A user message is a string when it is only text, else a list of ``text``
  and ``image_url`` (data URL) parts.
* An assistant message carries its text as ``content`` (``""`` when it only
  calls tools) and its calls as ``tool_calls`` (ids and names as the format
  accepts them, :mod:`.wire_ids`: up to 40 printable characters),
  arguments as the JSON text. ``reasoning_content`` is added to *every*
  assistant message when the model requires its reasoning back
  (``reasoning_history == "required"``, DeepSeek thinking mode): the joined
  reasoning text, or a single space when there was none (an empty string is
  refused). Otherwise reasoning is never sent.
* A tool output is a ``tool`` message (text only: the format has no images
  there). Images of the outputs of one assistant message follow them in one
  synthetic user message, each introduced by a line naming its call.
* ``tools`` is omitted when there are none: vLLM refuses ``tools: []``.
* ``stream_options.include_usage`` asks for usage when streaming; the client
  drops it for servers that refuse it.
* Tools named ``$...`` are Moonshot builtins: only the Kimi dialect sends
  them.

The Kimi (Moonshot) dialect changes tools, reasoning back, tool results and
a trailing prefill: see :mod:`.kimi`.
"""

from __future__ import annotations

from typing import Any

from kun.contracts.model import ModelRequest
from kun.model.body import RequestBody
from kun.model.endpoints import is_kimi_host
from kun.model.request.base import (
    BaseCodec,
    EncodedWireItems,
    WireItems,
    function_tools,
    openai_content,
)
from kun.model.request.images import Image
from kun.model.request.kimi import kimi_tools
from kun.model.request.messages import Assistant, Message, System, Text, ToolOutput, User
from kun.model.request.reasoning import chat_reasoning
from kun.model.request.wire_ids import ID_RULES

__all__ = ["ChatCompletionsCodec", "tool_images_intro"]


class ChatCompletionsCodec(BaseCodec):
    """Encodes a request as a chat completions body (see the module docstring)."""

    ids = ID_RULES["chat_completions"]

    @property
    def kimi(self) -> bool:
        """Whether this codec speaks the Kimi dialect (:mod:`.kimi`): the
        provider said so, or the endpoint is a Moonshot host."""
        if self.dialect is not None:
            return self.dialect == "kimi"
        return self.endpoint_url is not None and is_kimi_host(self.endpoint_url)

    @property
    def builtin_names(self) -> bool:
        return self.kimi

    def encode(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> dict[str, Any]:
        body = self._head(request, model, stream, max_tokens, reasoning_effort)
        body["messages"] = self.wire_messages(self.messages(request))
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
        head = self._head(request, model, stream, max_tokens, reasoning_effort)
        messages, encoded = self.messages_and_items(request)
        return RequestBody(head, "messages", self._wire(messages, EncodedWireItems(encoded)))

    def _head(
        self,
        request: ModelRequest,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        body.update(chat_reasoning(self.capabilities, reasoning_effort, self.endpoint_url))
        if self.kimi:
            if request.tools:
                body["tools"] = kimi_tools(request.tools)
        elif tools := function_tools(request.tools):
            body["tools"] = tools
        return body

    def wire_messages(self, messages: list[Message]) -> list[dict[str, Any]]:
        dicts: list[dict[str, Any]] = self._wire(messages, WireItems())
        return dicts

    def _wire(self, messages: list[Message], wire: WireItems) -> list[Any]:
        kimi = self.kimi
        if self.capabilities.reasoning_history == "required":
            assistant = _assistant_with
        else:
            assistant = _kimi_assistant if kimi else _assistant_without
        tool = _kimi_tool if kimi else _tool
        images: list[dict[str, Any]] = []
        last = len(messages) - 1
        for at, message in enumerate(messages):
            if images and not isinstance(message, ToolOutput):
                wire.extra([{"role": "user", "content": images}])
                images = []
            if isinstance(message, System):
                wire.add(message, _system)
            elif isinstance(message, User):
                wire.add(message, _user)
            elif isinstance(message, Assistant):
                if kimi and at == last and not message.calls:
                    wire.extra([{**assistant(message)[0], "partial": True}])
                else:
                    wire.add(message, assistant)
            else:
                wire.add(message, tool)
                if message.images:
                    images.append({"type": "text", "text": tool_images_intro(message)})
                    images += (_image_part(image) for image in message.images)
        if images:
            wire.extra([{"role": "user", "content": images}])
        return wire.out


def tool_images_intro(output: ToolOutput) -> str:
    """The line that introduces the images of a tool output in a user message."""
    return f"Images returned by tool call {output.call_id} ({output.name}):"


def _assistant(message: Assistant, reasoning: str | None) -> dict[str, Any]:
    wire: dict[str, Any] = {"role": "assistant", "content": message.text}
    if reasoning is not None:
        wire["reasoning_content"] = reasoning
    if calls := message.calls:
        wire["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in calls
        ]
    return wire


def _reasoning_text(message: Assistant) -> str:
    return "".join(r.text for r in message.reasoning)


def _system(message: System) -> list[dict[str, Any]]:
    return [{"role": "system", "content": message.text}]


def _user(message: User) -> list[dict[str, Any]]:
    return [{"role": "user", "content": _content(message.content)}]


def _assistant_with(message: Assistant) -> list[dict[str, Any]]:
    return [_assistant(message, _reasoning_text(message) or " ")]


def _assistant_without(message: Assistant) -> list[dict[str, Any]]:
    return [_assistant(message, None)]


def _kimi_assistant(message: Assistant) -> list[dict[str, Any]]:
    """Kimi, a model that does not require it: the reasoning recorded, if
    any (a thinking model gets :func:`_assistant_with`, as DeepSeek's)."""
    return [_assistant(message, _reasoning_text(message) or None)]


def _tool(output: ToolOutput) -> list[dict[str, Any]]:
    return [{"role": "tool", "tool_call_id": output.call_id, "content": output.text}]


def _kimi_tool(output: ToolOutput) -> list[dict[str, Any]]:
    return [
        {
            "role": "tool",
            "tool_call_id": output.call_id,
            "name": output.name,
            "content": output.text,
        }
    ]


def _content(parts: tuple[Text | Image, ...]) -> str | list[dict[str, Any]]:
    return openai_content(parts, "text", _image_part)


def _image_part(image: Image) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": image.data_url}}
