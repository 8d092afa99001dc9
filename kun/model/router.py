"""One model client in front of several providers.

:class:`MultiProviderClient` implements the :class:`~kun.model.port.ModelClient`
port. Each ``stream`` call goes to the provider its request names in
``provider_id``, else to the default provider:

* ``"<provider>"``: that provider's default model;
* ``"<provider>/<model>"``: that model of that provider (split at the first
  ``/``, so ``openrouter/anthropic/claude-sonnet-4.5`` works; provider
  names never contain one).

A provider is a :class:`ModelSource` (:class:`kun.model.factory.ProviderClients`
builds its clients from the configuration, all sharing one
``httpx.AsyncClient``). Failures keep the port's contract: an unknown
provider id is an ``error`` chunk with code ``unknown_provider`` listing the
configured providers, and a provider that cannot be set up (its API key
variable is not set) is one with code ``provider_unavailable``: never an
exception, so the turn records it like any provider failure. Callers that
prefer an exception up front use :meth:`MultiProviderClient.select`.

The router is immutable like every client: :meth:`~MultiProviderClient.with_thinking`
and :meth:`~MultiProviderClient.with_max_completion_tokens` return routers
whose selected clients are clones of the sources' clients (which share the
sources' transports).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncGenerator, Iterable
from typing import Protocol, Self

from kun.contracts.capabilities import ModelCapabilities
from kun.contracts.model import ErrorChunk, ModelRequest, ModelStreamChunk
from kun.errors import KunError, UserMistake
from kun.model.port import ModelClient

__all__ = ["ModelSource", "MultiProviderClient", "UnknownProvider"]


class UnknownProvider(UserMistake):
    """A request named a provider that is not configured."""

    def __init__(self, provider_id: str, configured: Iterable[str]) -> None:
        self.provider_id = provider_id
        self.configured = tuple(configured)
        super().__init__(
            f"no provider named {provider_id!r} is configured "
            f"(configured: {', '.join(self.configured) or 'none'}): continue the "
            "thread with one of them with --provider NAME --model MODEL (over the API, "
            "PATCH the thread's provider and model), or configure it"
        )


class ModelSource(Protocol):
    """One provider's models, as the router sees them.

    ``client(None)`` is the default model's client. ``client`` may raise a
    :class:`~kun.errors.KunError` when the provider cannot be set up (a
    configuration problem); it is called on the event loop's thread.
    """

    @property
    def name(self) -> str: ...

    @property
    def default_model(self) -> str: ...

    def client(self, model: str | None = None) -> ModelClient: ...

    def capabilities(self, model: str | None = None) -> ModelCapabilities: ...

    async def aclose(self) -> None: ...


class MultiProviderClient:
    """Routes each request to a provider's client (see the module docstring).

    ``default`` names the provider of requests without ``provider_id``
    (default: the first source). :meth:`aclose` closes every source.
    """

    def __init__(self, sources: Iterable[ModelSource], default: str | None = None) -> None:
        self._sources = {source.name: source for source in sources}
        if not self._sources:
            raise ValueError("a router needs at least one provider")
        self._default = default if default is not None else next(iter(self._sources))
        if self._default not in self._sources:
            raise UnknownProvider(self._default, self._sources)
        self._thinking: str | None = None
        self._max_tokens: int | None = None

    @property
    def provider(self) -> str:
        """The default provider."""
        return self._default

    @property
    def model(self) -> str:
        """The default provider's default model."""
        return self._sources[self._default].default_model

    @property
    def providers(self) -> tuple[str, ...]:
        """The configured providers, in configuration order."""
        return tuple(self._sources)

    def select(self, provider_id: str | None = None) -> ModelClient:
        """The client a request with ``provider_id`` goes to. Raises
        :class:`UnknownProvider`, or the source's error when it cannot be set
        up."""
        source, model = self._route(provider_id)
        client = source.client(model)
        if self._thinking is not None:
            client = client.with_thinking(self._thinking)
        if self._max_tokens is not None:
            client = client.with_max_completion_tokens(self._max_tokens)
        return client

    def capabilities(self, provider_id: str | None = None) -> ModelCapabilities:
        """What the model a request with ``provider_id`` goes to can do."""
        source, model = self._route(provider_id)
        return source.capabilities(model)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelStreamChunk, None]:
        """Stream ``request`` from the client :meth:`select` picks; a routing
        failure is the one ``error`` chunk of the stream."""
        try:
            client = self.select(request.provider_id)
        except UnknownProvider as exc:
            yield ErrorChunk(message=str(exc), code="unknown_provider")
            return
        except KunError as exc:
            yield ErrorChunk(message=str(exc), code="provider_unavailable")
            return
        chunks = client.stream(request)
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            close = getattr(chunks, "aclose", None)
            if close is not None:
                await close()

    def with_thinking(self, effort: str) -> Self:
        """A router whose clients ask for reasoning ``effort``."""
        clone = copy.copy(self)
        clone._thinking = effort
        return clone

    def with_max_completion_tokens(self, n: int) -> Self:
        """A router whose clients cap answers at ``n`` tokens."""
        if n < 1:
            raise ValueError("max completion tokens must be positive")
        clone = copy.copy(self)
        clone._max_tokens = n
        return clone

    async def aclose(self) -> None:
        """Close every source's transport (clones share them: close once)."""
        for source in self._sources.values():
            await source.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _route(self, provider_id: str | None) -> tuple[ModelSource, str | None]:
        if not provider_id:
            return self._sources[self._default], None
        name, _, model = provider_id.partition("/")
        source = self._sources.get(name)
        if source is None:
            raise UnknownProvider(name, self._sources)
        return source, model or None
