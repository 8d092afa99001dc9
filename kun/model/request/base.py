"""What the three codecs share: the model, the endpoint, the attachment
loader, and a cache that projects a growing history by appending.

A codec is built for one model at one endpoint (:func:`~kun.model.request_codec.
codec_for`): ``capabilities`` pick the reasoning dialect and whether images
are sent as images, ``endpoint_url`` tells the official DeepSeek host and
Azure hosts apart, ``load_attachment`` reads attachment bytes (see
:mod:`.images`). Encoding is otherwise pure.

The cache keeps the :class:`~.messages.HistoryProjection` of the last few
histories, keyed by their first item's id. A request whose items start with
the items already projected (the next step of the same turn, the next turn
of the same thread) only projects the items added; anything else starts
afresh. Results never depend on the cache. Each codec class names the
tool-call id rule of its format (``ids``, :mod:`.wire_ids`); the projection
maps ids as it appends, so the cache keeps the mapping stable too.

Beside the projections of the four histories used last the cache keeps
the encoded wire items of their messages
(:class:`~kun.model.body.EncodedItems`): ``encode_body`` gives the
body as pieces (:class:`~kun.model.body.RequestBody`), encoding only what
the step added, byte for byte the ``dict`` of ``encode``. A codec writes its
last list once, against :class:`WireItems` (``dict`` items for ``encode``)
or :class:`EncodedWireItems` (``bytes`` items, kept per message).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any, ClassVar, TypeVar

from kun.contracts.capabilities import UNKNOWN, ModelCapabilities
from kun.contracts.items import Item
from kun.contracts.model import ModelRequest, ToolSpec
from kun.model.body import EncodedItems, encode_item
from kun.model.request.images import (
    DEFAULT_FALLBACK_LIMIT,
    AttachmentLoader,
    AttachmentReader,
    Image,
)
from kun.model.request.kimi import is_builtin
from kun.model.request.messages import HistoryProjection, Message, System, Text, assemble
from kun.model.request.wire_ids import ID_RULES, IdRule

__all__ = [
    "BaseCodec",
    "EncodedWireItems",
    "WireItems",
    "function_tools",
    "openai_content",
    "split_leading_system",
]

_CACHED_HISTORIES = 16
_ENCODED_HISTORIES = 4
"""Encoded items are a copy of a history's text (a projection shares the
items' strings): only the histories used last keep them."""
_M = TypeVar("_M")


class WireItems:
    """The items of a body's last list, built as ``dict`` values:
    :meth:`add` those of one message (``build(message)``), :meth:`extra`
    those that come from several (images of tool outputs) or none."""

    def __init__(self) -> None:
        self.out: list[Any] = []

    def add(self, message: _M, build: Callable[[_M], list[dict[str, Any]]]) -> None:
        self.out += build(message)

    def extra(self, items: list[dict[str, Any]]) -> None:
        self.out += items


class EncodedWireItems(WireItems):
    """The same items encoded, those of a message kept in ``encoded`` (so a
    settled message is built and encoded once per history)."""

    def __init__(self, encoded: EncodedItems) -> None:
        super().__init__()
        self.encoded = encoded

    def add(self, message: _M, build: Callable[[_M], list[dict[str, Any]]]) -> None:
        self.out += self.encoded.items(message, lambda: build(message))

    def extra(self, items: list[dict[str, Any]]) -> None:
        self.out += (encode_item(item) for item in items)


class BaseCodec:
    """Base of the three codecs (see the module docstring)."""

    ids: ClassVar[IdRule] = ID_RULES["messages"]

    def __init__(
        self,
        capabilities: ModelCapabilities = UNKNOWN,
        *,
        endpoint_url: str | None = None,
        load_attachment: AttachmentLoader | None = None,
        fallback_limit: int = DEFAULT_FALLBACK_LIMIT,
        dialect: str | None = None,
    ) -> None:
        self.capabilities = capabilities
        self.endpoint_url = endpoint_url
        self.dialect = dialect
        self.reader = AttachmentReader(
            load_attachment, takes_images=capabilities.takes_images, limit=fallback_limit
        )
        self._histories: OrderedDict[str, _Cached] = OrderedDict()

    @property
    def builtin_names(self) -> bool:
        """Whether the history keeps Moonshot's builtin tool names (the Kimi
        dialect overrides this)."""
        return False

    def messages(self, request: ModelRequest) -> list[Message]:
        """The request's neutral messages, in cache order."""
        return self.messages_and_items(request)[0]

    def messages_and_items(self, request: ModelRequest) -> tuple[list[Message], EncodedItems]:
        """The request's neutral messages, and the encoded items kept for
        its history (started afresh for this request, :meth:`EncodedItems.begin`)."""
        items = (*request.prefix, *request.history)
        history, encoded = self._history(items)
        encoded.begin()
        return assemble(request, history, self.reader), encoded

    def _history(self, items: Sequence[Item]) -> tuple[list[Message], EncodedItems]:
        if not items:
            return [], EncodedItems()
        key = items[0].id
        cached = self._histories.pop(key, None)
        if cached is None or not _starts_with(items, cached.seen):
            projection = HistoryProjection(self.reader, self.ids, builtins=self.builtin_names)
            cached = _Cached(projection)
        added = items[len(cached.seen) :]
        cached.projection.extend(added)
        cached.seen += added
        self._histories[key] = cached
        while len(self._histories) > _CACHED_HISTORIES:
            self._histories.popitem(last=False)
        older = next(islice(reversed(self._histories.values()), _ENCODED_HISTORIES, None), None)
        if older is not None:
            older.encoded = EncodedItems()
        return cached.projection.messages(), cached.encoded


class _Cached:
    """One history's projection, the items it was built from, and the
    encoded wire items of its messages."""

    __slots__ = ("encoded", "projection", "seen")

    def __init__(self, projection: HistoryProjection) -> None:
        self.projection = projection
        self.seen: list[Item] = []
        self.encoded = EncodedItems()


def split_leading_system(messages: list[Message]) -> tuple[list[str], list[Message]]:
    """The texts of the leading system messages, and the messages after them."""
    at = 0
    texts: list[str] = []
    while at < len(messages) and isinstance(system := messages[at], System) and not system.late:
        texts.append(system.text)
        at += 1
    return texts, messages[at:]


def openai_content(
    parts: Sequence[Text | Image], text_type: str, image_part: Callable[[Image], dict[str, Any]]
) -> str | list[dict[str, Any]]:
    """A user message's content in the OpenAI formats: a plain string when it
    is only text, else typed parts (``text_type`` names the text part's type)."""
    if all(isinstance(part, Text) for part in parts):
        return "\n\n".join(part.text for part in parts if isinstance(part, Text))
    return [
        {"type": text_type, "text": part.text} if isinstance(part, Text) else image_part(part)
        for part in parts
    ]


def function_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tools as chat completions ``{"type": "function", "function": ...}``;
    Moonshot's builtins (``$web_search``, :mod:`.kimi`) are left out: no
    other provider has them."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
        if not is_builtin(tool.name)
    ]


def _starts_with(items: Sequence[Item], seen: Sequence[Item]) -> bool:
    if len(seen) > len(items):
        return False
    return all(a is b or a == b for a, b in zip(seen, items, strict=False))
