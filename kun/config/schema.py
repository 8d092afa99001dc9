"""The shape of ``kun.toml``, as msgspec Structs, and the providers kun knows.

Two layers: the tables as written (:class:`ConfigFile`, :class:`ProviderTable`;
every field optional, unknown fields forbidden) and the configuration in use
(:class:`Config`, :class:`ProviderConfig`; every default resolved). Model and
retry tables need no resolving and serve both.

No field holds a secret: a provider names the environment variable that
holds its key (``api_key_env``), and ``[tools.bash] env_allow`` names
variables, never values.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, NamedTuple

import msgspec

from kun.contracts.capabilities import ReasoningHistory, ReasoningProtocol
from kun.contracts.model import WireFormat
from kun.contracts.threads import ApprovalPolicy

__all__ = [
    "EFFORT_PATTERN",
    "KNOWN_PROVIDERS",
    "URL_PATTERN",
    "VERTEX_DEFAULT_LOCATION",
    "BashSettings",
    "CapabilityOverrides",
    "Config",
    "ConfigFile",
    "Dialect",
    "EndpointFormat",
    "KnownProvider",
    "McpServerTable",
    "ModelSettings",
    "ObservabilityTable",
    "ProviderConfig",
    "ProviderKind",
    "ProviderTable",
    "RetrySettings",
    "RuntimeTable",
    "SandboxMode",
    "StoreTable",
    "ToolSettings",
    "known_provider",
]

EndpointFormat = Literal["chat_completions", "responses", "messages", "gemini", "custom_endpoint"]
"""As :data:`kun.model.endpoints.EndpointFormat` (a test keeps them equal);
declared here so reading the configuration does not import the model layer."""
ProviderKind = Literal["http", "agent-sdk"]
"""``http``: kun's own loop calls the provider's API. ``agent-sdk``: the
Claude Agent SDK runs whole turns (:mod:`kun.model.delegated`)."""

Modality = Literal["text", "image", "audio", "video", "pdf"]
Dialect = Literal["kimi"]
"""A provider's dialect of its wire format, when its host does not say it
(a relay in front of Moonshot): ``kimi`` (:mod:`kun.model.request.kimi`)."""
PositiveInt = Annotated[int, msgspec.Meta(ge=1)]
PositiveFloat = Annotated[float, msgspec.Meta(gt=0)]
Seconds = Annotated[float, msgspec.Meta(ge=0)]
Fraction = Annotated[float, msgspec.Meta(ge=0, le=1)]
HttpStatus = Annotated[int, msgspec.Meta(ge=100, le=599)]
EnvName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
EFFORT_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"
"""A reasoning effort: ``off``, ``on`` or a level a model declares."""
Effort = Annotated[str, msgspec.Meta(pattern=EFFORT_PATTERN)]
NonBlank = Annotated[str, msgspec.Meta(pattern=r"\S")]
GoogleId = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
"""A Google Cloud project id or location: they go into a URL path."""
VERTEX_DEFAULT_LOCATION = "global"
URL_PATTERN = r"[hH][tT][tT][pP][sS]?://[^\s\x00-\x1f\x7f-\x9f/?#]+[^\s\x00-\x1f\x7f-\x9f]*"
"""An http(s) URL without whitespace or control characters: httpx refuses
them when it sends, so such a URL is refused when it is read."""
HttpUrl = Annotated[str, msgspec.Meta(pattern=rf"^{URL_PATTERN}\Z")]

_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/@]*)@")


class CapabilityOverrides(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What configuration says of a model, over the catalogue and kun's table
    (:func:`kun.model.capabilities.capabilities`). ``None``: not said."""

    input_modalities: tuple[Modality, ...] | None = None
    max_context_tokens: PositiveInt | None = None
    max_output_tokens: PositiveInt | None = None
    tool_use: bool | None = None
    reasoning: bool | None = None
    reasoning_protocol: ReasoningProtocol | None = None
    reasoning_history: ReasoningHistory | None = None
    endpoint_format: WireFormat | None = None


class ModelSettings(CapabilityOverrides, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[providers.<name>.models."<model>"]``: capability overrides, plus
    ``max_tokens``, the completion budget asked for unless a request says."""

    max_tokens: PositiveInt | None = None


class RetrySettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[providers.<name>.retry]``: the fields of
    :class:`kun.model.retry.RetryPolicy`; ``None`` keeps its default."""

    statuses: tuple[HttpStatus, ...] | None = None
    max_attempts: PositiveInt | None = None
    base_delay: Seconds | None = None
    max_delay: Seconds | None = None
    max_retry_after: Seconds | None = None
    jitter: Fraction | None = None
    transport_errors: bool | None = None


SandboxMode = Literal["auto", "on", "off"]


class BashSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[tools.bash]``. ``env_allow``: environment variables that commands
    run by ``bash`` get although kun would withhold them (a secret-looking
    name, a provider's ``api_key_env``; see :mod:`kun.tools.environment`).
    Their values are still redacted from what the model reads.

    ``sandbox``: whether commands (and stdio MCP servers) run under
    bubblewrap (:mod:`kun.tools.sandbox`): ``auto`` when nobody approves
    them first (``full-auto``, ``kun serve``), ``on`` always, ``off`` never
    (dangerous). ``writable``: paths writable in the sandbox besides the
    workspace and a private ``/tmp`` (``~`` expanded; relative to the
    workspace). ``network``: whether the sandbox has the network."""

    env_allow: tuple[EnvName, ...] = ()
    sandbox: SandboxMode = "auto"
    writable: tuple[NonBlank, ...] = ()
    network: bool = False


class ToolSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[tools]``: settings of the built-in tools."""

    bash: BashSettings = BashSettings()


McpEffect = Literal["read", "write", "exec"]
McpSandbox = Literal["inherit", "on", "off"]


class McpServerTable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[mcp.<name>]``: one MCP tool server (:mod:`kun.mcp`). ``command``
    and ``args`` start it over stdio, with only the variables named in
    ``env`` passed through; or ``url`` reaches it over streamable HTTP, with
    ``headers_env`` mapping a header to the variable holding its value.
    Names only, never values: the values are read when kun connects and are
    scrubbed from every result. ``approval`` is the effect the approval
    policy judges its tools by (``exec``: anything may happen);
    ``timeout_seconds`` bounds each call (and the start, given at least
    30 s). ``sandbox`` and ``network`` (stdio only) run this server in the
    sandbox (:mod:`kun.tools.sandbox`) or not, with the network or not,
    whatever ``[tools.bash]`` says (``inherit``, ``None``: as it says), so
    a server that needs the network can have it without ``bash``."""

    command: NonBlank | None = None
    args: tuple[str, ...] = ()
    env: tuple[EnvName, ...] = ()
    url: HttpUrl | None = None
    headers_env: dict[str, EnvName] = {}
    approval: McpEffect = "exec"
    timeout_seconds: PositiveFloat = 60.0
    enabled: bool = True
    sandbox: McpSandbox = "inherit"
    network: bool | None = None


class RuntimeTable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[runtime]``: how turns run unless a flag says otherwise (``None``:
    kun's default; :mod:`kun.app.settings` merges them with the flags and says
    where each value came from). ``approval_policy`` is the policy of new
    threads (a thread keeps its own); the limits fail a turn that reaches
    them (``turn_step_limit``, ``turn_wall_time_limit``,
    ``budget_exhausted``, ``turn_token_limit``; kun's defaults are in
    :class:`kun.runtime.context.TurnLimits`); ``system_prompt`` replaces
    kun's persona;
    ``compact_at`` is the share of the model's context window the estimated
    prompt may fill before the history is compacted (kun's default 0.8); the
    ``repetition_*`` keys tune the repeated-reply check of goal turns
    (:class:`kun.domain.repetition.RepetitionSettings`, SPEC §7.2); the
    ``goal_resume_*`` keys are the backoff of cross-turn goal resume
    (:class:`kun.domain.resume_policy.ResumeSettings`, SPEC §7.4; the max must
    not be below the base, checked by :func:`kun.config.load.parse_config`);
    ``model_titles`` asks the model for a new thread's title in the
    background (:mod:`kun.runtime.titler`; off by default: one more request);
    ``max_parallel_agents`` bounds how many sub-agents run at once (4) and
    ``max_agent_depth`` how deep they may delegate (1: a sub-agent does not
    delegate; 0: no ``delegate_task`` at all; :mod:`kun.runtime.delegation`)."""

    approval_policy: ApprovalPolicy | None = None
    reasoning_effort: Effort | None = None
    max_steps: PositiveInt | None = None
    max_wall_seconds: PositiveFloat | None = None
    max_cost_usd: PositiveFloat | None = None
    max_turn_tokens: PositiveInt | None = None
    system_prompt: NonBlank | None = None
    compact_at: Annotated[float, msgspec.Meta(gt=0, le=1)] | None = None
    repetition_dice: Annotated[float, msgspec.Meta(gt=0, le=1)] | None = None
    repetition_min_chars: Annotated[int, msgspec.Meta(ge=2)] | None = None
    repetition_max_repeats: Annotated[int, msgspec.Meta(ge=0)] | None = None
    goal_resume_base_seconds: PositiveFloat | None = None
    goal_resume_max_seconds: PositiveFloat | None = None
    goal_resume_max_attempts: PositiveInt | None = None
    model_titles: bool | None = None
    max_parallel_agents: PositiveInt | None = None
    max_agent_depth: Annotated[int, msgspec.Meta(ge=0)] | None = None


class AgentTable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[agents.<name>]``: a sub-agent profile ``delegate_task`` may name
    (:class:`kun.runtime.delegation.AgentProfile`). Unset keys take the
    parent thread's provider, model and policy, and the read-only tools; a
    sub-agent never gets a tool or a permission its parent lacks."""

    description: str = ""
    provider: str | None = None
    model: str | None = None
    system_prompt: str = ""
    tools: list[NonBlank] | None = None
    approval_policy: ApprovalPolicy | None = None


class ProviderTable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[providers.<name>]`` as written; :class:`ProviderConfig` once resolved.
    ``kind = "agent-sdk"`` hands turns to the Claude Agent SDK; ``cli_path``
    (that kind only) is the ``claude`` executable it runs.

    ``dialect``: the provider speaks a dialect of its format that its host
    does not reveal (``kimi``; Moonshot's own hosts are recognised without
    it). ``web_search``: offer Moonshot's builtin ``$web_search`` to the
    model (Kimi dialect only; Moonshot runs the search and bills it)."""

    base_url: HttpUrl | None = None
    endpoint_format: EndpointFormat | None = None
    api_key_env: EnvName | None = None
    headers: dict[str, str] = {}
    proxy: HttpUrl | None = None
    retry: RetrySettings = RetrySettings()
    idle_timeout: PositiveFloat | None = None
    connect_timeout: PositiveFloat | None = None
    catalog: str | None = None
    default_model: str | None = None
    models: dict[str, ModelSettings] = {}
    kind: ProviderKind | None = None
    cli_path: NonBlank | None = None
    dialect: Dialect | None = None
    web_search: bool = False
    vertex_project: GoogleId | None = None
    vertex_location: GoogleId | None = None


class ObservabilityTable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[observability]`` (:mod:`kun.observe`): ``log`` writes one JSON line
    per model call, tool call and turn to ``<home>/logs/kun-YYYYMMDD.jsonl``
    (``file``), stderr, or a file of that path (anything else); ``log_content``
    adds prompts, replies and tool arguments and output, scrubbed of known
    secrets; ``otel`` makes OpenTelemetry spans (the ``kun[otel]`` extra).
    All off by default; ``--log-json``, ``--log-json-to``, ``--log-content``,
    ``KUN_LOG_JSON``, ``KUN_LOG_CONTENT`` and ``KUN_OTEL`` turn them on."""

    log: NonBlank = "off"
    log_content: bool = False
    otel: bool = False


class StoreTable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``[store]``: ``url`` names the PostgreSQL database that holds the
    threads (``postgresql://user@host/db``) instead of the home's JSONL
    files (:mod:`kun.app.stores`). Never with a password: libpq reads it
    from ``$PGPASSWORD`` or ``~/.pgpass``."""

    url: str | None = None


class ConfigFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole ``kun.toml`` as written."""

    default_provider: str | None = None
    providers: dict[str, ProviderTable] = {}
    tools: ToolSettings = ToolSettings()
    runtime: RuntimeTable = RuntimeTable()
    mcp: dict[str, McpServerTable] = {}
    observability: ObservabilityTable = ObservabilityTable()
    store: StoreTable = StoreTable()
    agents: dict[str, AgentTable] = {}


class ProviderConfig(msgspec.Struct, frozen=True, kw_only=True):
    """One provider, every default resolved.

    ``catalog`` is the models.dev provider id whose entries describe this
    provider's models (default: the provider's name). ``api_key_env`` is
    ``None`` for a server that needs no key (a local one);
    ``api_key_implied_by`` is the key path that made it the known
    provider's variable when the file did not name one (the provider's
    table, by its name, or its ``catalog``), so an error can say why that
    variable is wanted. ``dialect`` and ``web_search`` are the table's
    (:class:`ProviderTable`). The repr masks a proxy password, the one
    credential the file may hold.
    """

    name: str
    base_url: str
    endpoint_format: EndpointFormat
    default_model: str
    catalog: str
    api_key_env: str | None = None
    api_key_implied_by: str | None = None
    headers: dict[str, str] = {}
    proxy: str | None = None
    retry: RetrySettings = RetrySettings()
    idle_timeout: float | None = None
    connect_timeout: float | None = None
    models: dict[str, ModelSettings] = {}
    kind: ProviderKind = "http"
    cli_path: str | None = None
    dialect: Dialect | None = None
    web_search: bool = False
    vertex_project: str | None = None
    vertex_location: str | None = None

    @property
    def vertex(self) -> tuple[str, str] | None:
        """Vertex AI's project and location, for a ``gemini`` provider served there."""
        if self.vertex_project is None:
            return None
        return self.vertex_project, self.vertex_location or VERTEX_DEFAULT_LOCATION

    def __repr__(self) -> str:
        shown = msgspec.structs.asdict(self)
        if self.proxy is not None:
            shown["proxy"] = _mask_password(self.proxy)
        return f"ProviderConfig({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def model_settings(self, model: str) -> ModelSettings | None:
        """The ``models`` table of ``model``, if the file has one."""
        return self.models.get(model)


class Config(msgspec.Struct, frozen=True, kw_only=True):
    """The configuration in use. ``source`` is the file it came from, or
    :data:`~kun.config.ENVIRONMENT` when it was inferred; ``default_provider`` is ``None``
    only when no provider is configured at all; ``tools`` is the file's
    ``[tools]`` table and ``runtime`` its ``[runtime]`` (defaults when
    inferred); ``mcp`` its MCP servers by name; ``store`` its ``[store]``."""

    source: str
    providers: dict[str, ProviderConfig] = {}
    default_provider: str | None = None
    tools: ToolSettings = ToolSettings()
    runtime: RuntimeTable = RuntimeTable()
    mcp: dict[str, McpServerTable] = {}
    observability: ObservabilityTable = ObservabilityTable()
    store: StoreTable = StoreTable()
    agents: dict[str, AgentTable] = {}


class KnownProvider(NamedTuple):
    """A provider kun can set up from its API key alone."""

    name: str
    api_key_env: str
    base_url_env: str
    base_url: str
    endpoint_format: EndpointFormat
    default_model: str


KNOWN_PROVIDERS: tuple[KnownProvider, ...] = (
    KnownProvider(
        "openai",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "https://api.openai.com/v1",
        "chat_completions",
        "gpt-4.1",
    ),
    KnownProvider(
        "anthropic",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com",
        "messages",
        "claude-sonnet-4-5",
    ),
    KnownProvider(
        "deepseek",
        "DEEPSEEK_API_KEY",
        "DEEPSEEK_BASE_URL",
        "https://api.deepseek.com",
        "chat_completions",
        "deepseek-chat",
    ),
    KnownProvider(
        "openrouter",
        "OPENROUTER_API_KEY",
        "OPENROUTER_BASE_URL",
        "https://openrouter.ai/api/v1",
        "chat_completions",
        "anthropic/claude-sonnet-4.5",
    ),
    KnownProvider(
        "google",
        "GEMINI_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "https://generativelanguage.googleapis.com/v1beta",
        "gemini",
        "gemini-2.5-flash",
    ),
    KnownProvider(
        "moonshotai",
        "MOONSHOT_API_KEY",
        "MOONSHOT_BASE_URL",
        "https://api.moonshot.ai/v1",
        "chat_completions",
        "kimi-k2.6",
    ),
)
"""Defaults for a provider of one of these names (or ``catalog`` ids) in
``kun.toml``, and the providers inferred from the environment, the first set
preferred. The key variables and URLs agree with the models.dev catalogue and
the default models are in it (a test checks both); the default formats are
the providers' native ones."""

_KNOWN = {known.name: known for known in KNOWN_PROVIDERS}


def known_provider(name: str) -> KnownProvider | None:
    """The known provider called ``name`` (a provider name or catalog id), if any."""
    return _KNOWN.get(name)


def _mask_password(url: str) -> str:
    match = _USERINFO.match(url)
    if match is None or ":" not in match.group(2):
        return url
    user = match.group(2).partition(":")[0]
    return f"{match.group(1)}{user}:[redacted]@{url[match.end() :]}"
