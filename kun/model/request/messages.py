"""The neutral conversation every codec starts from, and the message-level repair.

:func:`assemble` lays a :class:`~kun.contracts.model.ModelRequest` out in the
order that is the cache strategy (SPEC §8.3)::

    system prompt -> persona -> project context
    -> mode instruction                               (System, byte-stable)
    prefix + history, repaired                        (User/Assistant/ToolOutput)
    request attachments on the last user message
    context instructions                              (System, after the history)

The system prompt, persona, project context and mode instruction are
*leading* system messages; the context instructions are a *late* one
(``late=True``, even with no history), and each codec places it where its
format allows (a trailing system message, a developer message, a text
block on the last user turn).

The history part comes from :mod:`kun.domain.history` (item level) through
:class:`HistoryProjection`, which caches the messages of settled entries so a
longer history of the same thread is projected by appending: two requests of
one turn share every message of the earlier history, object for object, and
so byte for byte once encoded. :func:`heal_tool_pairs` then checks the
message level on its own: a tool output that does not directly follow the
assistant message calling it is dropped, and an assistant message whose
calls are not all answered right after it loses its calls (and their
outputs); it is dropped if nothing else is left.

Call ids and tool names are the wire's here, not the log's: the projection
maps them for its format as it goes (:mod:`.wire_ids`), and a step's
outputs take the ids of its calls by position, so the pairing the item-level
repair settled cannot be broken by the mapping. A step's reasoning comes
first in its assistant message whatever order the log holds it in (a
signature-only thinking block is recorded after the calls it came before).

Attachments: an attachment of a history user message is projected on that
message, every request (bytes stay stable for the cache; one too large for
the model in use is a note, never an error that would refuse every later
request of the thread); the request's own
``attachments`` are appended to the last user message (a new user message at
the end if there is none), skipping any that message already carries. Tool
outputs with images keep them here; a text-only model gets
``(image omitted)`` in the output text instead (:mod:`.images`). An empty
tool output is sent as ``(no output)``: several providers reject empty
content.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from kun.contracts.items import (
    AssistantReasoning,
    AssistantText,
    Attachment,
    Compaction,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)
from kun.contracts.model import ModelRequest
from kun.domain.history import HistoryEntry, HistoryRepair, ModelEntry, UserEntry
from kun.model.request.images import AttachmentReader, Image
from kun.model.request.wire_ids import ID_RULES, CallIds, IdRule, wire_tool_name

__all__ = [
    "NO_OUTPUT",
    "Assistant",
    "Call",
    "HistoryProjection",
    "Message",
    "Reasoning",
    "System",
    "Text",
    "ToolOutput",
    "User",
    "assemble",
    "heal_tool_pairs",
    "project_entry",
]

NO_OUTPUT = "(no output)"


class Text(msgspec.Struct, frozen=True, gc=False):
    """Text; ``thought_signature`` (Gemini's, on an assistant's text) goes
    back on the part it came with and is ignored by the other formats."""

    text: str
    thought_signature: str | None = None


class Reasoning(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Reasoning; ``signature`` is Anthropic's, ``thought_signature`` Gemini's."""

    text: str
    signature: str | None = None
    thought_signature: str | None = None


class Call(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A tool call; ``arguments`` is the compact JSON of an object;
    ``thought_signature`` is Gemini's, from the call's own part."""

    call_id: str
    name: str
    arguments: msgspec.Raw
    thought_signature: str | None = None

    @property
    def arguments_json(self) -> str:
        return bytes(self.arguments).decode("utf-8")


class System(msgspec.Struct, frozen=True, gc=False):
    """A system message; ``late`` ones come after the conversation started
    (the context instructions), even when there is no conversation yet."""

    text: str
    late: bool = False


class User(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A user message; ``attachments`` are the ones its images/texts came from."""

    content: tuple[Text | Image, ...]
    attachments: tuple[Attachment, ...] = ()


class Assistant(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    content: tuple[Reasoning | Text | Call, ...]

    @property
    def calls(self) -> tuple[Call, ...]:
        return tuple(part for part in self.content if isinstance(part, Call))

    @property
    def text(self) -> str:
        """The text parts, joined by a blank line."""
        return "\n\n".join(part.text for part in self.content if isinstance(part, Text))

    @property
    def reasoning(self) -> tuple[Reasoning, ...]:
        return tuple(part for part in self.content if isinstance(part, Reasoning))


class ToolOutput(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    call_id: str
    name: str
    text: str
    is_error: bool = False
    images: tuple[Image, ...] = ()


Message = System | User | Assistant | ToolOutput


def project_entry(
    entry: HistoryEntry,
    reader: AttachmentReader,
    ids: CallIds,
    *,
    keep: bool = True,
    builtins: bool = False,
) -> list[Message]:
    """The messages of one repaired history entry; ``ids`` maps its call
    ids (and remembers them unless ``keep`` is false); ``builtins`` keeps
    Moonshot's builtin tool names (:func:`~.wire_ids.wire_tool_name`)."""
    if isinstance(entry, UserEntry):
        return _user(entry.item, reader)
    return _model(entry, reader, ids, keep, builtins)


class HistoryProjection:
    """The messages of an item history, extended by appending items.

    Messages of settled entries are computed once and kept; only the step
    still open is projected again on each :meth:`messages` call. ``ids`` is
    the format's rule for call ids (default: the strictest); ``builtins``
    keeps Moonshot's builtin tool names (the Kimi dialect).
    """

    def __init__(
        self,
        reader: AttachmentReader,
        ids: IdRule = ID_RULES["messages"],
        *,
        builtins: bool = False,
    ) -> None:
        self._builtins = builtins
        self._reader = reader
        self._repair = HistoryRepair()
        self._ids = CallIds(ids)
        self._messages: list[Message] = []
        self._projected = 0

    def extend(self, items: Iterable[Item]) -> HistoryProjection:
        repair = self._repair
        for item in items:
            repair.feed(item)
        settled = repair.settled
        for entry in settled[self._projected :]:
            self._messages += project_entry(entry, self._reader, self._ids, builtins=self._builtins)
        self._projected = len(settled)
        return self

    def messages(self) -> list[Message]:
        tail = [
            m
            for entry in self._repair.tail()
            for m in project_entry(
                entry, self._reader, self._ids, keep=False, builtins=self._builtins
            )
        ]
        return self._messages + tail


def assemble(
    request: ModelRequest, history: Sequence[Message], reader: AttachmentReader
) -> list[Message]:
    """The request's messages in cache order (see the module docstring);
    ``history`` is the projection of ``request.prefix + request.history``."""
    leading = (
        request.system_prompt,
        request.persona,
        request.project_context,
        request.mode_instruction,
    )
    messages: list[Message] = [System(text) for text in leading if text and text.strip()]
    body = heal_tool_pairs(history)
    if request.attachments:
        body = _attach(body, request.attachments, reader)
    messages += body
    context = request.context_instructions
    if context and context.strip():
        messages.append(System(context, late=True))
    return messages


def heal_tool_pairs(messages: Sequence[Message]) -> list[Message]:
    """Message-level repair (see the module docstring)."""
    healed: list[Message] = []
    at, end = 0, len(messages)
    while at < end:
        message = messages[at]
        at += 1
        if isinstance(message, ToolOutput):
            continue
        if not isinstance(message, Assistant) or not message.calls:
            healed.append(message)
            continue
        outputs: dict[str, ToolOutput] = {}
        while at < end and isinstance(following := messages[at], ToolOutput):
            outputs.setdefault(following.call_id, following)
            at += 1
        ids = [call.call_id for call in message.calls]
        if len(set(ids)) == len(ids) and all(call_id in outputs for call_id in ids):
            healed.append(message)
            healed += (outputs[call_id] for call_id in ids)
            continue
        rest = tuple(part for part in message.content if not isinstance(part, Call))
        if any(isinstance(part, Text) for part in rest):
            healed.append(Assistant(content=rest))
    return healed


def _user(item: UserMessage | Compaction, reader: AttachmentReader) -> list[Message]:
    if isinstance(item, Compaction):
        return [User(content=(Text(item.summary),))]
    content: list[Text | Image] = [Text(item.text)] if item.text.strip() else []
    content += (_part(reader.for_user(a, strict=False)) for a in item.attachments)
    return [User(content=tuple(content), attachments=item.attachments)] if content else []


def _model(
    entry: ModelEntry, reader: AttachmentReader, ids: CallIds, keep: bool, builtins: bool
) -> list[Message]:
    calls = entry.calls
    wire_ids = iter(ids.assign([call.call_id for call in calls], keep=keep))
    names = {call.name: wire_tool_name(call.name, builtins=builtins) for call in calls}
    reasoning = [
        Reasoning(
            text=item.text, signature=item.signature, thought_signature=item.thought_signature
        )
        for item in entry.output
        if isinstance(item, AssistantReasoning)
    ]
    parts: list[Reasoning | Text | Call] = [*reasoning]
    wire: list[Call] = []
    for item in entry.output:
        if isinstance(item, ToolCall):
            call = Call(
                call_id=next(wire_ids),
                name=names[item.name],
                arguments=_arguments(item),
                thought_signature=item.thought_signature,
            )
            parts.append(call)
            wire.append(call)
        elif isinstance(item, AssistantText):
            parts.append(Text(item.text, item.thought_signature))
    messages: list[Message] = [Assistant(content=tuple(parts))]
    messages += (
        _tool_output(result, call, reader) for result, call in zip(entry.results, wire, strict=True)
    )
    return messages


def _tool_output(result: ToolResult, call: Call, reader: AttachmentReader) -> ToolOutput:
    text = result.output if result.output.strip() else NO_OUTPUT
    images: list[Image] = []
    for attachment in result.attachments:
        seen = reader.for_tool(attachment)
        if isinstance(seen, Image):
            images.append(seen)
        else:
            text = f"{text}\n{seen}"
    return ToolOutput(
        call_id=call.call_id,
        name=call.name,
        text=text,
        is_error=result.is_error,
        images=tuple(images),
    )


def _arguments(call: ToolCall) -> msgspec.Raw:
    """The call's arguments, as a JSON object whatever the log holds."""
    raw = bytes(call.arguments)
    try:
        if isinstance(msgspec.json.decode(raw), dict):
            return call.arguments
    except msgspec.DecodeError:
        pass
    return msgspec.Raw(msgspec.json.encode({"__raw": raw.decode("utf-8", "replace")}))


def _attach(
    messages: list[Message], attachments: Sequence[Attachment], reader: AttachmentReader
) -> list[Message]:
    at = next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], User)), None)
    target = messages[at] if at is not None else None
    had = target.attachments if isinstance(target, User) else ()
    new = [a for a in attachments if a not in had]
    if not new:
        return messages
    parts = tuple(_part(reader.for_user(a)) for a in new)
    if at is None or not isinstance(target, User):
        return [*messages, User(content=parts, attachments=tuple(new))]
    merged = User(content=target.content + parts, attachments=had + tuple(new))
    return [*messages[:at], merged, *messages[at + 1 :]]


def _part(seen: Image | str) -> Text | Image:
    return seen if isinstance(seen, Image) else Text(seen)
