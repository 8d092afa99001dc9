"""Errors of the model layer.

::

    RuntimeFailure (kun.errors)
    └── ChatProviderError       a model provider failed us
        └── StreamProtocolError the stream broke the wire protocol in a way no
                                recovery rule covers: a tool-call id that is not
                                a string, holds control characters or is longer
                                than 256 characters; a late id colliding with
                                another pending call; a delta for a call that
                                was already settled.

A frame that is not JSON is not an error: the decoders skip and count it.
The HTTP-level hierarchy (connection, timeout, status, rate limit, quota,
context overflow, ...) lands here with the HTTP client.
"""

from __future__ import annotations

from kun.errors import RuntimeFailure


class ChatProviderError(RuntimeFailure):
    """A model provider failed to give a usable answer."""

    code: str = "provider_error"


class StreamProtocolError(ChatProviderError):
    """Raised by the stream decoders when a stream is malformed beyond repair;
    guessing would attach arguments to the wrong tool call."""

    code = "stream_protocol_error"
