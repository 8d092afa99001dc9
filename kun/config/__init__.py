"""``kun.toml``: which model providers kun talks to, and how.

Lookup (:func:`find_config`), first that applies: the file named by
``--config``; the file named by ``$KUN_CONFIG``; ``./kun.toml``;
``$KUN_HOME/kun.toml`` (the home of ``--home``, else ``$KUN_HOME``, else
``~/.kun``). A file named on purpose (the first two) must exist. With no
file at all, providers are inferred from ``OPENAI_API_KEY``,
``ANTHROPIC_API_KEY``, ``DEEPSEEK_API_KEY`` and ``OPENROUTER_API_KEY``, each
with a ``*_BASE_URL`` override (:func:`infer_config`).

A file declares providers (``[providers.<name>]``: base URL, endpoint
format, the *name* of the environment variable holding the API key, extra
headers, proxy, retry settings, timeouts, the models.dev ``catalog`` id,
the default model, and per-model tables of capability overrides and
``max_tokens``) and ``default_provider``. A provider named like a known one
(``openai``, ``anthropic``, ``deepseek``, ``openrouter``) needs nothing
but what differs from its defaults.

Tools: ``[tools.bash] env_allow`` lists environment variables that the
commands the model runs may have although their names look secret (see
:mod:`kun.tools.environment`).

Secrets: the file names the variable that holds a key, never the key. A
literal key (``api_key = ...``, an ``Authorization`` header, a password or
token in ``base_url``) is refused with a message saying to use an
environment variable, so a configuration holds no secret (but a proxy
password, masked in the repr) and its reprs and errors are safe. Keys are
read from the environment when clients are built (:mod:`kun.model.factory`),
and one that can never be sent is refused there, naming its variable
(:mod:`kun.config.keys`).

Errors: one :class:`ConfigError` (a :class:`~kun.errors.UserMistake`)
naming the file, the TOML key path (``providers.openai.base_url``) and what
was expected.

This package sits below the model layer: it imports only ``kun.contracts``
and ``kun.errors``, so reading the configuration loads neither httpx nor the
models.dev catalogue.
"""

from __future__ import annotations

from kun.config.errors import ConfigError, key_path
from kun.config.keys import read_api_key
from kun.config.load import (
    CONFIG_NAME,
    ENVIRONMENT,
    find_config,
    infer_config,
    load_config,
    parse_config,
)
from kun.config.schema import (
    KNOWN_PROVIDERS,
    BashSettings,
    CapabilityOverrides,
    Config,
    EndpointFormat,
    KnownProvider,
    ModelSettings,
    ProviderConfig,
    RetrySettings,
    ToolSettings,
)

__all__ = [
    "CONFIG_NAME",
    "ENVIRONMENT",
    "KNOWN_PROVIDERS",
    "BashSettings",
    "CapabilityOverrides",
    "Config",
    "ConfigError",
    "EndpointFormat",
    "KnownProvider",
    "ModelSettings",
    "ProviderConfig",
    "RetrySettings",
    "ToolSettings",
    "find_config",
    "infer_config",
    "key_path",
    "load_config",
    "parse_config",
    "read_api_key",
]
