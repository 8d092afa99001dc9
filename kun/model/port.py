"""The model port: one verb, ``stream``.

Every adapter — the HTTP client for the three wire formats, the scripted
client of tests and the demo, a delegated engine later — implements
``ModelClient``. The loop sees only ``ModelRequest`` in and the seven chunk
kinds of :mod:`kun.contracts.model` out; it never sees httpx or a provider's
JSON.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, Self

from kun.contracts.model import ModelRequest, ModelStreamChunk


class ModelClient(Protocol):
    """A model reachable for streaming completions.

    Contract of ``stream``: yields chunks in order and ends with exactly one
    ``completed`` or ``error`` chunk; failures the provider reports (HTTP
    errors after retries, broken streams, idle timeouts) arrive as an
    ``error`` chunk with a code, never as an exception, so a turn can record
    them. Cancelling the consuming scope aborts at once: the response is
    closed and nothing more is read. A client value is immutable: the
    ``with_*`` methods return clones that share the same transport.
    """

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamChunk]: ...

    def with_thinking(self, effort: str) -> Self: ...

    def with_max_completion_tokens(self, n: int) -> Self: ...
