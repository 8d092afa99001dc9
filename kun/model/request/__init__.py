"""Request assembly: a :class:`~kun.contracts.model.ModelRequest` becomes the
body of one wire format.

::

    items --(kun.domain.history: item-level repair)--> entries
          --(messages: projection, message-level repair, cache order)--> messages
          --(chat_completions | responses | anthropic | gemini)--> body

with :mod:`.reasoning` choosing each model's reasoning fields and
:mod:`.images` turning attachments into images or bounded text.
"""

from __future__ import annotations

from kun.model.request.anthropic import MessagesCodec, cache_breakpoints
from kun.model.request.base import BaseCodec
from kun.model.request.chat_completions import ChatCompletionsCodec
from kun.model.request.gemini import GeminiCodec
from kun.model.request.images import (
    DEFAULT_FALLBACK_LIMIT,
    AttachmentLoader,
    AttachmentReader,
    Image,
    read_attachment,
    sniff_image_type,
)
from kun.model.request.messages import HistoryProjection, Message, assemble, heal_tool_pairs
from kun.model.request.responses import ResponsesCodec

__all__ = [
    "DEFAULT_FALLBACK_LIMIT",
    "AttachmentLoader",
    "AttachmentReader",
    "BaseCodec",
    "ChatCompletionsCodec",
    "GeminiCodec",
    "HistoryProjection",
    "Image",
    "Message",
    "MessagesCodec",
    "ResponsesCodec",
    "assemble",
    "cache_breakpoints",
    "heal_tool_pairs",
    "read_attachment",
    "sniff_image_type",
]
