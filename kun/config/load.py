"""Finding, reading and resolving the configuration (see :mod:`kun.config`)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from kun.config.errors import ConfigError, UntrustedKey, explain, key_path
from kun.config.keys import value_problem
from kun.config.schema import (
    KNOWN_PROVIDERS,
    URL_PATTERN,
    VERTEX_DEFAULT_LOCATION,
    BashSettings,
    Config,
    ConfigFile,
    KnownProvider,
    McpServerTable,
    ProviderConfig,
    ProviderTable,
    RuntimeTable,
    SandboxMode,
    StoreTable,
    known_provider,
)
from kun.config.trust import is_trusted
from kun.domain.resume_policy import ResumeSettings

__all__ = [
    "CONFIG_NAME",
    "ENVIRONMENT",
    "find_config",
    "infer_config",
    "load_config",
    "parse_config",
]

CONFIG_NAME = "kun.toml"

ENVIRONMENT = "environment (no kun.toml found)"
"""The ``source`` of a configuration inferred from the environment."""

_PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_URL = re.compile(URL_PATTERN)
_CREDENTIAL_HEADER = re.compile(r"auth|key|token|secret|password|cookie", re.IGNORECASE)
_URL_SECRET = re.compile(
    r"^[a-z][a-z0-9+.-]*://[^/@]*@|[?&;][^=&]*(?:key|token|secret|signature|auth|password)[^=&]*=",
    re.IGNORECASE,
)
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_USE_ENV = "put the API key in an environment variable and name it with api_key_env"
_VERTEX_HOST = "aiplatform.googleapis.com"
_MCP_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*")


def find_config(
    path: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> Path | None:
    """The configuration file to read, or ``None``: ``path`` (``--config``),
    else ``$KUN_CONFIG``, else ``<workspace>/kun.toml`` (the workspace of
    the thread being continued: its project's configuration, wherever the
    command runs), else ``./kun.toml``, else ``<home>/kun.toml`` where home
    is ``home`` (``--home``), else ``$KUN_HOME``, else ``~/.kun``.

    Raises :class:`ConfigError` when the file named by ``path`` or
    ``$KUN_CONFIG`` is not there: a name given on purpose that leads nowhere
    is a mistake, not a reason to fall back silently. Relative names are
    taken from ``cwd`` (default: the working directory).
    """
    env = os.environ if environ is None else environ
    base = Path.cwd() if cwd is None else Path(cwd)
    named = path if path is not None else (env.get("KUN_CONFIG") or None)
    if named is not None:
        explicit = base / Path(named).expanduser()
        if not explicit.is_file():
            via = "--config" if path is not None else "$KUN_CONFIG"
            what = "is not a file" if explicit.exists() else "does not exist"
            raise ConfigError(str(explicit), "", f"the file named by {via} {what}")
        return explicit
    if workspace is not None and (base / workspace / CONFIG_NAME).is_file():
        return base / workspace / CONFIG_NAME
    local = base / CONFIG_NAME
    if local.is_file():
        return local
    in_home = _home_file(home, base, env)
    return in_home if in_home.is_file() else None


def _home_file(home: str | os.PathLike[str] | None, base: Path, env: Mapping[str, str]) -> Path:
    root = Path(home if home is not None else (env.get("KUN_HOME") or "~/.kun")).expanduser()
    return base / root / CONFIG_NAME


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    workspace: str | os.PathLike[str] | None = None,
) -> Config:
    """The configuration in use: the file :func:`find_config` finds, else the
    providers :func:`infer_config` finds in the environment."""
    env = os.environ if environ is None else environ
    found = find_config(path, home=home, cwd=cwd, environ=env, workspace=workspace)
    if found is None:
        return infer_config(env)
    try:
        data = found.read_bytes()
    except OSError as exc:
        raise ConfigError(str(found), "", f"cannot be read: {exc.strerror or exc}") from exc
    config = parse_config(data, str(found))
    named = path is not None or bool(env.get("KUN_CONFIG"))
    home_file = _home_file(home, Path.cwd() if cwd is None else Path(cwd), env)
    if named or (home_file.is_file() and found.samefile(home_file)):
        return config
    if is_trusted(home_file.parent, found, data):
        return config
    _refuse_untrusted(config, msgspec.toml.decode(data))
    return _under_home_floor(config, data, home_file)


_PERMISSIVE_APPROVALS = ("never", "auto", "full-auto")
_OBSERVE_WORDS = ("off", "file", "stderr")


def _refuse_untrusted(config: Config, raw: dict[str, Any]) -> None:
    """Refuse a project's ``kun.toml`` (found in the workspace or the working
    directory, not trusted with ``kun trust``) that sets a key which runs a
    program, sends a credential or widens the sandbox: a command run in the
    sandbox can write there, and a cloned repository can ship one. Nothing
    it asks for runs until the user has read the file and trusted it."""
    keys = [
        *(_mcp_keys(name, table) for name, table in config.mcp.items()),
        *(_provider_keys(name, raw) for name in config.providers),
        _bash_keys(config.tools.bash),
    ]
    if config.runtime.approval_policy in _PERMISSIVE_APPROVALS:
        keys.append(["runtime.approval_policy"])
    if config.observability.log not in _OBSERVE_WORDS:
        keys.append(["observability.log"])
    if config.store.url is not None:
        keys.append(["store.url"])
    refused = [key for group in keys for key in group]
    if refused:
        raise UntrustedKey(config.source, refused[0])


def _mcp_keys(name: str, table: McpServerTable) -> list[str]:
    here = ("mcp", name)
    found = [key for key in ("command", "url") if getattr(table, key) is not None]
    if table.headers_env:
        found.append("headers_env")
    if table.sandbox == "off":
        found.append("sandbox")
    if table.network:
        found.append("network")
    return [key_path((*here, key)) for key in found]


def _provider_keys(name: str, raw: dict[str, Any]) -> list[str]:
    written = raw.get("providers", {}).get(name, {})
    return [
        key_path(("providers", name, key))
        for key in ("base_url", "api_key_env", "headers", "proxy", "cli_path")
        if key in written
    ]


def _bash_keys(bash: BashSettings) -> list[str]:
    return [
        *(["tools.bash.sandbox"] if bash.sandbox == "off" else []),
        *(["tools.bash.network"] if bash.network else []),
        *(["tools.bash.writable"] if bash.writable else []),
        *(["tools.bash.env_allow"] if bash.env_allow else []),
    ]


_STRICTNESS: dict[SandboxMode, int] = {"off": 0, "auto": 1, "on": 2}


def _under_home_floor(config: Config, data: bytes, home_file: Path) -> Config:
    """An untrusted project file's ``[tools.bash]`` with the home file's as a
    floor: the stricter ``sandbox`` of the two, the network only if both
    allow it, and the home file's ``writable``. Narrowing is all such a file
    may do; a key it leaves out keeps the home's value."""
    home = _home_bash(home_file)
    project = config.tools.bash
    written = msgspec.toml.decode(data).get("tools", {}).get("bash", {})
    sandbox = max(home.sandbox, project.sandbox, key=_STRICTNESS.__getitem__)
    network = home.network and ("network" not in written or project.network)
    bash = msgspec.structs.replace(
        project, sandbox=sandbox, network=network, writable=home.writable
    )
    tools = msgspec.structs.replace(config.tools, bash=bash)
    return msgspec.structs.replace(config, tools=tools)


def _home_bash(home_file: Path) -> BashSettings:
    try:
        data = home_file.read_bytes()
    except FileNotFoundError:
        return BashSettings()
    except OSError as exc:
        raise ConfigError(str(home_file), "", f"cannot be read: {exc.strerror or exc}") from exc
    return parse_config(data, str(home_file)).tools.bash


def parse_config(data: bytes | str, source: str) -> Config:
    """Decode and resolve the text of a ``kun.toml``; ``source`` names it in
    errors. Raises :class:`ConfigError`."""
    try:
        table = msgspec.toml.decode(data, type=ConfigFile)
    except msgspec.ValidationError as exc:
        raise explain(exc, data, ConfigFile, source) from None
    except msgspec.DecodeError as exc:
        raise ConfigError(source, "", f"is not valid TOML: {exc}") from None
    providers = {
        name: _resolve_provider(name, entry, source) for name, entry in table.providers.items()
    }
    default = table.default_provider
    if default is not None and default not in providers:
        choices = ", ".join(providers) or "none is configured"
        raise ConfigError(
            source, "default_provider", f"expected the name of a provider ({choices})"
        )
    for name, server in table.mcp.items():
        _check_mcp(name, server, source)
    _check_resume_backoff(table.runtime, source)
    _check_store(table.store, source)
    for name, agent in table.agents.items():
        if agent.provider is not None and agent.provider not in providers:
            choices = ", ".join(providers) or "none is configured"
            raise ConfigError(
                source, f"agents.{name}.provider", f"expected the name of a provider ({choices})"
            )
    return Config(
        source=source,
        providers=providers,
        default_provider=default if default is not None else next(iter(providers), None),
        tools=table.tools,
        runtime=table.runtime,
        mcp=dict(table.mcp),
        observability=table.observability,
        store=table.store,
        agents=dict(table.agents),
    )


def infer_config(environ: Mapping[str, str] | None = None) -> Config:
    """The providers of :data:`~kun.config.KNOWN_PROVIDERS` whose API key
    variable is set, each at its ``*_BASE_URL`` when that is set; the first
    is the default. No key set: no provider (not an error until a model is
    needed)."""
    env = os.environ if environ is None else environ
    source = ENVIRONMENT
    providers: dict[str, ProviderConfig] = {}
    for known in KNOWN_PROVIDERS:
        if not env.get(known.api_key_env):
            continue
        base_url = env.get(known.base_url_env) or known.base_url
        if _URL.fullmatch(base_url) is None:
            raise ConfigError(source, known.base_url_env, "expected an http:// or https:// URL")
        if _URL_SECRET.search(base_url):
            raise ConfigError(source, known.base_url_env, f"expected no credentials; {_USE_ENV}")
        providers[known.name] = ProviderConfig(
            name=known.name,
            base_url=base_url,
            endpoint_format=known.endpoint_format,
            default_model=known.default_model,
            catalog=known.name,
            api_key_env=known.api_key_env,
        )
    return Config(source=source, providers=providers, default_provider=next(iter(providers), None))


def _resolve_provider(name: str, table: ProviderTable, source: str) -> ProviderConfig:
    """``[providers.<name>]`` with the defaults of a known provider (by
    ``catalog``, else by name) filled in, and checked as a whole."""
    here = ("providers", name)
    if _PROVIDER_NAME.fullmatch(name) is None:
        raise ConfigError(
            source,
            key_path(here),
            "expected a provider name of letters, digits, '.', '_' and '-' "
            "(requests pick a model as <provider>/<model>)",
        )
    _refuse_credentials(table, here, source)
    if table.kind == "agent-sdk":
        return _resolve_agent_sdk(name, table, source)
    if table.cli_path is not None:
        raise ConfigError(
            source, key_path((*here, "cli_path")), 'expected none: only kind = "agent-sdk" runs one'
        )
    catalog = table.catalog or name
    known = known_provider(catalog)
    vertex = _vertex(table, here, source)
    base_url = table.base_url or vertex or (known.base_url if known else None)
    if base_url is None:
        raise ConfigError(source, key_path((*here, "base_url")), "expected the provider's URL")
    endpoint_format = table.endpoint_format
    if endpoint_format is None and (vertex is not None or _is_gemini_host(base_url)):
        endpoint_format = "gemini"
    endpoint_format = endpoint_format or (known.endpoint_format if known else None)
    if endpoint_format == "custom_endpoint":
        for model, settings in table.models.items():
            if settings.endpoint_format is not None:
                raise ConfigError(
                    source,
                    key_path((*here, "models", model, "endpoint_format")),
                    "expected none: the provider's base_url is a custom endpoint, "
                    "a full URL whose path fixes the format",
                )
    implied_by = _key_implied_by(table, known, here)
    default_model = table.default_model or (known.default_model if known else None)
    default_model = default_model or next(iter(table.models), None)
    if default_model is None:
        raise ConfigError(
            source, key_path((*here, "default_model")), "expected the model to use by default"
        )
    return ProviderConfig(
        name=name,
        base_url=base_url,
        endpoint_format=endpoint_format or "chat_completions",
        default_model=default_model,
        catalog=catalog,
        api_key_env=table.api_key_env or (known.api_key_env if known and implied_by else None),
        api_key_implied_by=implied_by,
        headers=dict(table.headers),
        proxy=table.proxy,
        retry=table.retry,
        idle_timeout=table.idle_timeout,
        connect_timeout=table.connect_timeout,
        models=dict(table.models),
        dialect=table.dialect,
        web_search=table.web_search,
        vertex_project=table.vertex_project,
        vertex_location=table.vertex_location,
    )


AGENT_SDK_DEFAULT_MODEL = "claude-sonnet-4-5"


def _resolve_agent_sdk(name: str, table: ProviderTable, source: str) -> ProviderConfig:
    """``[providers.<name>]`` of ``kind = "agent-sdk"``: the Claude Agent SDK
    runs its turns (:mod:`kun.model.delegated`). No URL or wire format (the
    ``claude`` executable talks to Anthropic); ``api_key_env`` names the
    variable of the subscription's OAuth token, if any (none: the login
    ``claude`` keeps); the default model must be a Claude model, since only
    those run there; ``cli_path``, the executable, is the SDK's own
    unless set."""
    here = ("providers", name)
    for key in ("base_url", "endpoint_format", "headers", "proxy"):
        if getattr(table, key):
            raise ConfigError(
                source,
                key_path((*here, key)),
                'expected none: kind = "agent-sdk" runs the claude executable, not HTTP requests',
            )
    default_model = table.default_model or next(iter(table.models), AGENT_SDK_DEFAULT_MODEL)
    if not default_model.lower().startswith("claude"):
        raise ConfigError(
            source,
            key_path((*here, "default_model")),
            'a Claude model id (claude-…): kind = "agent-sdk" runs Claude models only',
        )
    return ProviderConfig(
        name=name,
        base_url="",
        endpoint_format="messages",
        default_model=default_model,
        catalog=table.catalog or "anthropic",
        api_key_env=table.api_key_env,
        idle_timeout=table.idle_timeout,
        models=dict(table.models),
        kind="agent-sdk",
        cli_path=table.cli_path,
    )


def _vertex(table: ProviderTable, here: tuple[str, ...], source: str) -> str | None:
    """The default base URL of a provider served by Vertex AI (``None``:
    not on Vertex). Vertex takes an access token, which no known provider's
    variable holds, so ``api_key_env`` must name it."""
    if table.vertex_project is None:
        if table.vertex_location is not None:
            raise ConfigError(
                source, key_path((*here, "vertex_location")), "expected vertex_project too"
            )
        return None
    if table.endpoint_format not in (None, "gemini"):
        raise ConfigError(
            source,
            key_path((*here, "endpoint_format")),
            'expected "gemini" (or nothing): Vertex AI is reached in the Gemini format',
        )
    if table.api_key_env is None:
        raise ConfigError(
            source,
            key_path((*here, "api_key_env")),
            "expected the variable holding a Vertex AI access token "
            "(e.g. the output of gcloud auth print-access-token)",
        )
    location = table.vertex_location or VERTEX_DEFAULT_LOCATION
    host = _VERTEX_HOST if location == "global" else f"{location}-{_VERTEX_HOST}"
    return f"https://{host}"


def _is_gemini_host(url: str) -> bool:
    """Google's Gemini API or a Vertex AI host: the format to infer when
    none is named (as :func:`kun.model.endpoints.is_gemini_host`, which the
    configuration may not import)."""
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    return host == "generativelanguage.googleapis.com" or host.endswith(_VERTEX_HOST)


def _key_implied_by(
    table: ProviderTable, known: KnownProvider | None, here: tuple[str, ...]
) -> str | None:
    """Where a known provider's key variable comes from when the table
    names none: the provider's own name (``[providers.openai]``), or its
    ``catalog`` while it also talks to that provider's server. A table that
    borrows a catalogue only for its prices and capabilities and names its
    own ``base_url`` (a local OpenAI-compatible server) needs no key."""
    if table.api_key_env is not None or known is None:
        return None
    if table.catalog is None:
        return key_path(here)
    if table.base_url is None or table.base_url.rstrip("/") == known.base_url.rstrip("/"):
        return key_path((*here, "catalog"))
    return None


def _refuse_credentials(table: ProviderTable, here: tuple[str, ...], source: str) -> None:
    """A credential written into the file itself is refused, never quoted;
    so is a header that could never be sent."""
    for header, value in table.headers.items():
        where = key_path((*here, "headers", header))
        if _CREDENTIAL_HEADER.search(header):
            raise ConfigError(source, where, f"expected no credential in kun.toml; {_USE_ENV}")
        if _HEADER_NAME.fullmatch(header) is None:
            raise ConfigError(source, where, "expected a header name of letters, digits and -")
        problem = value_problem(value, spaces=True)
        if problem is not None:
            raise ConfigError(source, where, f"cannot be sent as an HTTP header: it {problem}")
    if table.base_url is not None and _URL_SECRET.search(table.base_url):
        raise ConfigError(
            source, key_path((*here, "base_url")), f"expected no credentials; {_USE_ENV}"
        )


_STORE_SCHEMES = ("postgresql://", "postgres://")


def _check_store(store: StoreTable, source: str) -> None:
    """``[store] url`` names a PostgreSQL database and holds no password:
    a configuration holds no secret (libpq reads ``$PGPASSWORD`` and
    ``~/.pgpass``). The URL itself is never quoted back: it may hold one."""
    url = store.url
    if url is None:
        return
    if not url.startswith(_STORE_SCHEMES):
        raise ConfigError(source, "store.url", "expected a URL such as postgresql://user@host/db")
    if _store_password(url):
        raise ConfigError(
            source,
            "store.url",
            "a password is not taken from kun.toml: remove it from the URL and set "
            "$PGPASSWORD or write it in ~/.pgpass",
        )


def _store_password(url: str) -> bool:
    """Whether ``url`` carries a password, in its user part or as a
    ``password`` parameter."""
    from urllib.parse import parse_qs, urlsplit

    try:
        parts = urlsplit(url)
        in_netloc = ":" in parts.netloc.rpartition("@")[0]
    except ValueError:
        return True  # unreadable: assume the worst rather than echo it
    return in_netloc or any(k.lower() == "password" for k in parse_qs(parts.query))


def _check_resume_backoff(runtime: RuntimeTable, source: str) -> None:
    """The goal resume backoff's cap may not be below its base; the error
    names the key the file wrote (the other may be kun's default)."""
    default = ResumeSettings()
    base = runtime.goal_resume_base_seconds
    cap = runtime.goal_resume_max_seconds
    if cap is not None and cap < (base or default.base_seconds):
        shown = f"{base:g}" if base is not None else f"{default.base_seconds:g}, kun's default"
        raise ConfigError(
            source,
            "runtime.goal_resume_max_seconds",
            f"expected at least runtime.goal_resume_base_seconds ({shown})",
        )
    if cap is None and base is not None and base > default.cap_seconds:
        raise ConfigError(
            source,
            "runtime.goal_resume_base_seconds",
            f"expected at most runtime.goal_resume_max_seconds ({default.cap_seconds:g}, "
            "kun's default)",
        )


def _check_mcp(name: str, table: McpServerTable, source: str) -> None:
    """``[mcp.<name>]`` as a whole: one transport, the keys of that
    transport only, and a name that can prefix tool names (``<name>__tool``)."""
    here = ("mcp", name)
    if _MCP_NAME.fullmatch(name) is None or len(name) > 32:
        raise ConfigError(
            source,
            key_path(here),
            "expected a server name of at most 32 letters, digits, '-' and single '_' "
            "(its tools are called <name>__<tool>)",
        )
    if (table.command is None) == (table.url is None):
        raise ConfigError(
            source, key_path(here), "expected either command (stdio) or url (streamable HTTP)"
        )
    stdio_only = (
        ("args", table.args),
        ("env", table.env),
        ("sandbox", table.sandbox != "inherit"),
        ("network", table.network is not None),
    )
    for key, value in stdio_only if table.url is not None else ():
        if value:
            raise ConfigError(source, key_path((*here, key)), "expected none with url (stdio only)")
    if table.command is not None and table.headers_env:
        raise ConfigError(
            source, key_path((*here, "headers_env")), "expected none with command (HTTP only)"
        )
    for header in table.headers_env:
        if _HEADER_NAME.fullmatch(header) is None:
            raise ConfigError(
                source,
                key_path((*here, "headers_env", header)),
                "expected a header name of letters, digits and -",
            )
    if table.url is not None and _URL_SECRET.search(table.url):
        raise ConfigError(
            source,
            key_path((*here, "url")),
            "expected no credentials; put them in an environment variable and name it "
            "in headers_env",
        )
