"""The Gemini ``generateContent`` body (Google AI Studio and Vertex AI).

``{systemInstruction?, tools?, generationConfig?, contents}`` with
``contents`` last. The model is in the URL, not the body
(:mod:`kun.model.endpoints`).

* ``systemInstruction``: the leading system messages, one text part each.
  A late one (the context instructions) is a text part at the end of the
  last user content (a new user content if the conversation ends with the
  model).
* ``contents`` alternate ``user`` and ``model``, starting with ``user``:
  consecutive messages of one role are merged into one content, a
  conversation that would start with the model gets a one-line user
  content first (Gemini wants a function call turn right after a user or
  function response turn), and an empty one gets :data:`EMPTY_CONVERSATION`.
* A user message is ``text`` and ``inlineData`` (base64 image) parts.
* An assistant message is ``model`` parts in the projection's order:
  reasoning that carries a Gemini ``thoughtSignature`` as a ``thought``
  part (other reasoning is dropped: Gemini cannot use another model's
  thoughts, nor its own unsigned summaries), text parts, then one
  ``functionCall`` part per call (``{name, args}``; args is the JSON
  object). Each part carries back, verbatim, the ``thoughtSignature`` it
  came with. A step whose first call has no Gemini signature (another
  provider's call, or from before the model thought) gets Google's
  documented stand-in :data:`SKIP_SIGNATURE` on that call for Gemini 3 and
  later, which refuse a call turn without one; earlier models never see it.
* Tool outputs: Gemini has no call ids, so a ``functionResponse`` part
  (``{name, response: {output | error}}``) answers each call by name and
  position, all of one step's in ONE user content, first in it; images of
  tool outputs follow them as sibling ``inlineData`` parts, each group
  introduced by a text part naming its call; then any user text.
* No part is empty: blank text is dropped (a signature on it moves to the
  next part of its content that has none).
* Tools: one ``functionDeclarations`` list; each tool's JSON Schema reduced
  to the subset Gemini accepts (:mod:`.gemini_schema`); names that Gemini
  refuses (it wants a letter or ``_`` first) are prefixed with ``_``, the
  same way on declarations, calls and responses.
* ``generationConfig``: ``maxOutputTokens`` when given, ``thinkingConfig``
  from the reasoning effort (:func:`~.reasoning.gemini_thinking`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import msgspec

from kun.contracts.model import ModelRequest, ToolSpec
from kun.model.body import RequestBody, encode_item
from kun.model.request.base import BaseCodec, split_leading_system
from kun.model.request.chat_completions import tool_images_intro
from kun.model.request.gemini_schema import gemini_parameters
from kun.model.request.images import Image
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
from kun.model.request.reasoning import gemini_thinking
from kun.model.request.wire_ids import ID_RULES

__all__ = [
    "EMPTY_CONVERSATION",
    "FIRST_USER_TURN",
    "SKIP_SIGNATURE",
    "GeminiCodec",
    "gemini_name",
]

FIRST_USER_TURN = "(earlier conversation omitted)"
EMPTY_CONVERSATION = "(empty message)"
SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented ``thoughtSignature`` for a function call that no
Gemini model signed (a call transferred from another model)."""

_GEMINI_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")
_BEFORE_SIGNATURES = re.compile(r"(?:models/)?gemini-(?:1|2)(?:\.|-)", re.IGNORECASE)


def gemini_name(name: str) -> str:
    """``name`` as Gemini accepts a function name (letter or ``_`` first, 64 at most)."""
    if _GEMINI_NAME.fullmatch(name):
        return name
    return f"_{name}"[:64]


class _Content:
    __slots__ = ("parts", "role", "sources")

    def __init__(self, role: str) -> None:
        self.role = role
        self.parts: list[dict[str, Any]] = []
        self.sources: list[Message] = []
        """The messages the parts come from (none: kun's own text)."""

    def wire(self) -> dict[str, Any]:
        return {"role": self.role, "parts": self.parts}

    def wire_items(self) -> list[dict[str, Any]]:
        return [self.wire()]


class GeminiCodec(BaseCodec):
    """Encodes a request as a Gemini ``generateContent`` body (see the module docstring)."""

    ids = ID_RULES["gemini"]

    def encode(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> dict[str, Any]:
        """``stream`` changes the URL, not the body."""
        body, contents = self._build(
            self.messages(request), request, model, max_tokens, reasoning_effort
        )
        body["contents"] = [content.wire() for content in contents]
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
        """:meth:`encode` as pieces (:mod:`kun.model.body`). A content's
        bytes depend only on its messages and on the model's signature
        rule, so every content of the history but the last (which takes
        the context instructions) is encoded once."""
        messages, encoded = self.messages_and_items(request)
        head, contents = self._build(messages, request, model, max_tokens, reasoning_effort)
        stand_in = _takes_stand_in(model)
        items: list[bytes] = []
        for n, content in enumerate(contents):
            if not content.sources or n == len(contents) - 1:
                items.append(encode_item(content.wire()))
                continue
            first, *rest = content.sources
            items += encoded.items(first, content.wire_items, (stand_in, *rest))
        return RequestBody(head, "contents", items)

    def _build(
        self,
        messages: list[Message],
        request: ModelRequest,
        model: str,
        max_tokens: int | None,
        reasoning_effort: str | None,
    ) -> tuple[dict[str, Any], list[_Content]]:
        """Every field but ``contents``, and the contents."""
        system, rest = split_leading_system(messages)
        body: dict[str, Any] = {}
        if system:
            body["systemInstruction"] = {"parts": [{"text": text} for text in system]}
        if request.tools:
            body["tools"] = [{"functionDeclarations": [_declaration(t) for t in request.tools]}]
        config: dict[str, Any] = {}
        if max_tokens is not None:
            config["maxOutputTokens"] = max_tokens
        thinking = gemini_thinking(self.capabilities, reasoning_effort, model, max_tokens)
        if thinking is not None:
            config["thinkingConfig"] = thinking
        if config:
            body["generationConfig"] = config
        return body, _contents(rest, stand_in=_takes_stand_in(model))


def _takes_stand_in(model: str) -> bool:
    """Whether unsigned calls get :data:`SKIP_SIGNATURE` (Gemini 3 and later)."""
    return _BEFORE_SIGNATURES.match(model) is None


def _declaration(tool: ToolSpec) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": gemini_name(tool.name)}
    if tool.description:
        declaration["description"] = tool.description
    parameters = _parameters(bytes(tool.parameters))
    if parameters is not None:
        declaration["parameters"] = parameters
    return declaration


@lru_cache(maxsize=512)
def _parameters(schema: bytes) -> dict[str, Any] | None:
    """A tool schema reduced once, not on every step (the result is only read)."""
    try:
        decoded = msgspec.json.decode(schema)
    except msgspec.DecodeError:
        decoded = None
    return gemini_parameters(decoded)


def _contents(messages: list[Message], *, stand_in: bool) -> list[_Content]:
    """Alternating contents of ``messages`` (leading system messages removed)."""
    contents: list[_Content] = []
    images: list[dict[str, Any]] = []
    late: list[str] = []

    def add(role: str, parts: list[dict[str, Any]], source: Message | None = None) -> None:
        parts = _without_empty(parts)
        if not parts:
            return
        if not contents or contents[-1].role != role:
            contents.append(_Content(role))
        contents[-1].parts += parts
        if source is not None:
            contents[-1].sources.append(source)

    for message in messages:
        if images and not isinstance(message, ToolOutput):
            add("user", images)
            images = []
        if isinstance(message, System):
            late.append(message.text)
        elif isinstance(message, User):
            add("user", [_user_part(part) for part in message.content], message)
        elif isinstance(message, Assistant):
            add("model", _model_parts(message, stand_in), message)
        else:
            add("user", [_response(message)], message)
            if message.images:
                images.append({"text": tool_images_intro(message)})
                images += (_inline(image) for image in message.images)
    add("user", images)
    if late:
        add("user", [{"text": text} for text in late])
    if not contents or contents[0].role != "user":
        first = _Content("user")
        first.parts.append({"text": FIRST_USER_TURN if contents else EMPTY_CONVERSATION})
        contents.insert(0, first)
    return contents


def _model_parts(message: Assistant, stand_in: bool) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    first_call = True
    for part in message.content:
        if isinstance(part, Reasoning):
            if part.thought_signature:
                parts.append(
                    {"text": part.text, "thought": True, "thoughtSignature": part.thought_signature}
                )
        elif isinstance(part, Text):
            parts.append(_signed({"text": part.text}, part.thought_signature))
        elif isinstance(part, Call):
            signature = part.thought_signature
            if signature is None and first_call and stand_in:
                signature = SKIP_SIGNATURE
            first_call = False
            call = {"name": gemini_name(part.name), "args": part.arguments}
            parts.append(_signed({"functionCall": call}, signature))
    return parts


def _signed(part: dict[str, Any], signature: str | None) -> dict[str, Any]:
    if signature:
        part["thoughtSignature"] = signature
    return part


def _without_empty(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``parts`` without blank text parts; a signature on one moves to the
    next kept part without a signature of its own (else the previous one)."""
    kept: list[dict[str, Any]] = []
    orphan: str | None = None
    for part in parts:
        if "text" in part and not part["text"].strip():
            orphan = part.get("thoughtSignature") or orphan
            continue
        if orphan is not None and "thoughtSignature" not in part:
            part = {**part, "thoughtSignature": orphan}
            orphan = None
        kept.append(part)
    if orphan is not None and kept and "thoughtSignature" not in kept[-1]:
        kept[-1] = {**kept[-1], "thoughtSignature": orphan}
    return kept


def _response(output: ToolOutput) -> dict[str, Any]:
    key = "error" if output.is_error else "output"
    return {"functionResponse": {"name": gemini_name(output.name), "response": {key: output.text}}}


def _user_part(part: Text | Image) -> dict[str, Any]:
    return {"text": part.text} if isinstance(part, Text) else _inline(part)


def _inline(image: Image) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.media_type, "data": image.data}}
