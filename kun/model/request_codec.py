"""The boundary between a :class:`ModelRequest` and a request body.

A :class:`RequestCodec` turns one request into the JSON object of one wire
format. It returns a ``dict`` rather than bytes so the HTTP client can adjust
transport-level fields after the fact (drop ``stream_options`` once a relay
has rejected it) without encoding twice; the client encodes the dict once,
with msgspec, so a tool's raw JSON Schema reaches the wire byte for byte.

The codecs live in :mod:`kun.model.request` (one module per format, over one
neutral message projection with history repair at the item and message
levels, the reasoning dialects and attachment handling). A codec is built for
one model at one endpoint: :func:`codec_for` takes the model's capabilities,
the endpoint URL and the attachment loader; without them it is an honest
"know nothing" codec (no reasoning fields, images as text, no attachment
content).
"""

from __future__ import annotations

from typing import Any, Protocol

from kun.contracts.capabilities import UNKNOWN, ModelCapabilities
from kun.contracts.model import ModelRequest, WireFormat
from kun.model.request.anthropic import MessagesCodec
from kun.model.request.chat_completions import ChatCompletionsCodec
from kun.model.request.gemini import GeminiCodec
from kun.model.request.images import DEFAULT_FALLBACK_LIMIT, AttachmentLoader
from kun.model.request.reasoning import ANTHROPIC_DEFAULT_MAX_TOKENS
from kun.model.request.responses import ResponsesCodec

__all__ = [
    "ANTHROPIC_DEFAULT_MAX_TOKENS",
    "ChatCompletionsCodec",
    "GeminiCodec",
    "MessagesCodec",
    "RequestCodec",
    "ResponsesCodec",
    "codec_for",
]


class RequestCodec(Protocol):
    """Encodes one request as the JSON object of one wire format.

    ``stream`` says whether the body asks for a stream; ``max_tokens`` and
    ``reasoning_effort`` are already resolved (the request's own value, else
    the client's) and ``None`` leaves the provider's default. The result is a
    fresh ``dict`` the caller may change. Raises
    :class:`~kun.model.errors.AttachmentTooLarge` when an attachment cannot
    be sent.
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


_CODECS: dict[
    WireFormat, type[ChatCompletionsCodec | ResponsesCodec | MessagesCodec | GeminiCodec]
] = {
    "chat_completions": ChatCompletionsCodec,
    "responses": ResponsesCodec,
    "messages": MessagesCodec,
    "gemini": GeminiCodec,
}


def codec_for(
    format: WireFormat,
    *,
    capabilities: ModelCapabilities = UNKNOWN,
    endpoint_url: str | None = None,
    load_attachment: AttachmentLoader | None = None,
    fallback_limit: int = DEFAULT_FALLBACK_LIMIT,
    dialect: str | None = None,
) -> RequestCodec:
    """A codec of ``format`` for one model (``capabilities``) at one endpoint.

    ``endpoint_url`` lets the reasoning dialects tell DeepSeek's official
    host and Azure hosts apart; ``load_attachment`` reads attachment bytes
    (:func:`kun.model.request.images.read_attachment` reads the file);
    ``fallback_limit`` bounds the base64 text sent for attachments a model
    cannot take as images. ``dialect`` names a provider's dialect of its
    format (``kimi``: :mod:`kun.model.request.kimi`); ``None`` recognises it
    from ``endpoint_url``'s host.
    """
    return _CODECS[format](
        capabilities,
        endpoint_url=endpoint_url,
        load_attachment=load_attachment,
        fallback_limit=fallback_limit,
        dialect=dialect,
    )
