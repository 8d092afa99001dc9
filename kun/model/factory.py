"""Model clients built from the configuration.

:func:`build_router` turns a :class:`~kun.config.Config` into a
:class:`~kun.model.router.MultiProviderClient` with one
:class:`ProviderClients` per provider (an ``agent-sdk`` provider is a
:class:`~kun.model.delegated.AgentSdkSource` instead: the Claude Agent SDK
runs its turns, it sends no HTTP requests). A provider's clients (one per model,
built on first use and kept) all share one ``httpx.AsyncClient``, built with
the provider's proxy: connections are pooled per provider, and a clone
(``with_thinking``...) never opens a transport of its own.

For each model:

* the capabilities are :func:`kun.model.capabilities.capabilities` of the
  provider's ``catalog`` id, with the model's table in ``kun.toml`` as
  overrides;
* the endpoint format is the model's (its table, else its capabilities),
  else the provider's; a provider whose format is ``custom_endpoint`` keeps
  it (its URL fixes the format);
* the request codec is built for that model at that endpoint
  (:func:`~kun.model.request_codec.codec_for`: the capabilities pick the
  reasoning dialect and whether images go as images; the provider's
  ``dialect``, else the endpoint's host, picks Kimi's,
  :mod:`kun.model.request.kimi`), reading attachments
  with ``load_attachment`` (default: the file at the attachment's path);
  ``web_search`` on a provider that does not speak Kimi's dialect is a
  :class:`~kun.config.ConfigError` (no other provider has ``$web_search``);
* retry settings, timeouts, headers and ``max_tokens`` come from the
  configuration; what it leaves unsaid keeps the client's defaults.

API keys are read from the environment variable the configuration names
when a provider's first client is built, never earlier and never stored
here: the default provider's at once (so a missing variable is reported
before anything runs), the others' when first used. A variable that is not
set, or whose value can never be sent (control characters, whitespace
around it, :func:`~kun.config.keys.read_api_key`; one trailing newline is
stripped with a note), is a :class:`~kun.config.ConfigError` naming it and
never quoting the value; through the router, an ``error`` chunk with code
``provider_unavailable``. The key goes to the client's headers and nowhere
else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx
import msgspec

from kun.config import KNOWN_PROVIDERS, Config, ConfigError, ProviderConfig, key_path
from kun.config.keys import read_api_key
from kun.contracts.capabilities import ModelCapabilities
from kun.model.capabilities import capabilities
from kun.model.client import HttpModelClient
from kun.model.debug import CallObserver
from kun.model.delegated import AgentSdkSource
from kun.model.endpoints import EndpointFormat, is_kimi_host, resolve_endpoint
from kun.model.errors import EndpointConfigError
from kun.model.request.images import AttachmentLoader, read_attachment
from kun.model.request_codec import codec_for
from kun.model.retry import RetryPolicy
from kun.model.router import MultiProviderClient

__all__ = ["ProviderClients", "build_router"]

_CONNECT_TIMEOUT = 30.0


def build_router(
    config: Config,
    *,
    environ: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    observer: CallObserver | None = None,
    load_attachment: AttachmentLoader | None = read_attachment,
) -> MultiProviderClient:
    """The router over every configured provider, its default client built
    (and so its API key checked) at once.

    ``environ`` is where API keys are read (default: ``os.environ``).
    ``transport`` replaces the network for every provider (tests); proxies
    are then not applied. ``observer`` (a
    :class:`~kun.model.debug.DebugRecorder`) watches every call.
    ``load_attachment`` reads attachment bytes for the codecs. Raises
    :class:`~kun.config.ConfigError` when no provider is configured or the
    default one cannot be built.
    """
    if not config.providers:
        variables = ", ".join(known.api_key_env for known in KNOWN_PROVIDERS)
        raise ConfigError(
            config.source,
            "",
            f"no model provider is configured: set one of {variables}, "
            "or declare [providers.<name>] in kun.toml",
        )
    env = os.environ if environ is None else environ
    sources: list[ProviderClients | AgentSdkSource] = [
        AgentSdkSource(provider, source=config.source)
        if provider.kind == "agent-sdk"
        else ProviderClients(
            provider,
            source=config.source,
            environ=env,
            transport=transport,
            observer=observer,
            load_attachment=load_attachment,
        )
        for provider in config.providers.values()
    ]
    router = MultiProviderClient(sources, default=config.default_provider)
    router.select()
    return router


class ProviderClients:
    """One provider's model clients, sharing one ``httpx.AsyncClient``
    (a :class:`~kun.model.router.ModelSource`)."""

    def __init__(
        self,
        config: ProviderConfig,
        *,
        source: str,
        environ: Mapping[str, str],
        transport: httpx.AsyncBaseTransport | None = None,
        observer: CallObserver | None = None,
        load_attachment: AttachmentLoader | None = read_attachment,
    ) -> None:
        self._config = config
        self._source = source
        self._environ = environ
        self._transport = transport
        self._observer = observer
        self._load_attachment = load_attachment
        self._http: httpx.AsyncClient | None = None
        self._clients: dict[str, HttpModelClient] = {}

    @property
    def name(self) -> str:
        return self._config.name

    @property
    def default_model(self) -> str:
        return self._config.default_model

    @property
    def http(self) -> httpx.AsyncClient | None:
        """The shared transport, once a client has been built."""
        return self._http

    def capabilities(self, model: str | None = None) -> ModelCapabilities:
        """What ``model`` (default: the default model) can do."""
        model = model or self._config.default_model
        return capabilities(self._config.catalog, model, self._config.model_settings(model))

    def client(self, model: str | None = None) -> HttpModelClient:
        """The client of ``model`` (default: the default model), built on
        first use. Raises :class:`~kun.config.ConfigError` when the API key
        variable is not set or the endpoint cannot work."""
        model = model or self._config.default_model
        built = self._clients.get(model)
        if built is None:
            built = self._clients[model] = self._build(model)
        return built

    async def aclose(self) -> None:
        """Close the shared transport (every client of this provider uses it)."""
        if self._http is not None:
            http, self._http = self._http, None
            self._clients.clear()
            await http.aclose()

    def _build(self, model: str) -> HttpModelClient:
        config = self._config
        api_key = self._api_key()
        settings = config.model_settings(model)
        known = self.capabilities(model)
        wire_format: EndpointFormat = config.endpoint_format
        if wire_format != "custom_endpoint":
            wire_format = known.endpoint_format or wire_format
        try:
            endpoint = resolve_endpoint(
                config.base_url, wire_format, model=model, vertex=config.vertex
            )
        except EndpointConfigError as exc:
            raise ConfigError(self._source, self._key("base_url"), str(exc)) from None
        kimi = config.dialect == "kimi" or is_kimi_host(endpoint.url)
        if config.web_search and not (kimi and endpoint.wire_format == "chat_completions"):
            raise ConfigError(
                self._source,
                self._key("web_search"),
                "expected the Kimi dialect of chat completions: $web_search is Moonshot's "
                'builtin (set dialect = "kimi" for a relay in front of Moonshot)',
            )
        codec = codec_for(
            endpoint.wire_format,
            capabilities=known,
            endpoint_url=endpoint.url,
            load_attachment=self._load_attachment,
            dialect=config.dialect,
        )
        options: dict[str, Any] = {}
        if config.idle_timeout is not None:
            options["idle_timeout"] = config.idle_timeout
        if config.connect_timeout is not None:
            options["connect_timeout"] = config.connect_timeout
        retry = {k: v for k, v in msgspec.structs.asdict(config.retry).items() if v is not None}
        client = HttpModelClient(
            config.name,
            model,
            config.base_url,
            wire_format,
            api_key=api_key,
            headers=config.headers,
            http=self._shared_http(),
            retry=RetryPolicy(**retry),
            codec=codec,
            shared_proxy=config.proxy if self._transport is None else None,
            observer=self._observer,
            catalog=config.catalog,
            vertex=config.vertex,
            **options,
        )
        if settings is not None and settings.max_tokens is not None:
            client = client.with_max_completion_tokens(settings.max_tokens)
        return client

    def _api_key(self) -> str | None:
        """The key, or ``None`` for a server that needs none. A variable
        the file did not name is blamed on the key that implied it (the
        provider's name, or its ``catalog``), with how to do without it."""
        config = self._config
        variable = config.api_key_env
        if variable is None:
            return None
        implied = config.api_key_implied_by
        if implied is None:
            return read_api_key(
                self._environ, variable, source=self._source, key=self._key("api_key_env")
            )
        if implied.endswith(".catalog"):
            hint = (
                f'(catalog = "{config.catalog}" takes its key variable while the provider '
                f"talks to {config.catalog}'s own server; for a server that needs no key, "
                "set base_url; for another variable, api_key_env)"
            )
        else:
            hint = (
                f"(a provider named {config.name} takes its key variable; for another, api_key_env)"
            )
        return read_api_key(self._environ, variable, source=self._source, key=implied, hint=hint)

    def _shared_http(self) -> httpx.AsyncClient:
        if self._http is None:
            timeout = httpx.Timeout(self._config.connect_timeout or _CONNECT_TIMEOUT, read=None)
            if self._transport is not None:
                self._http = httpx.AsyncClient(transport=self._transport, timeout=timeout)
            else:
                self._http = httpx.AsyncClient(proxy=self._config.proxy, timeout=timeout)
        return self._http

    def _key(self, field: str) -> str:
        return key_path(("providers", self._config.name, field))
