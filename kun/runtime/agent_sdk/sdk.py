"""The one door to the Claude Agent SDK: :class:`SdkApi`, what the engine
needs of it, and :func:`load_sdk`, the only place ``claude_agent_sdk`` is
imported — when a delegated turn runs, never when kun starts (``kun
--help`` and ``kun replay`` must stay fast, and the SDK is an optional
extra).

Tests give the engine an :class:`SdkApi` of their own (a fake client
driven by recorded messages), so the engine runs without the SDK and
without a ``claude`` executable. SDK failures are classified here by type
(:meth:`SdkApi.failure_code`), never by their message.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Sequence
from typing import Any, Protocol

from kun.errors import UserMistake
from kun.model.delegated import EXTRA
from kun.runtime.agent_sdk.bridge import BridgedTool
from kun.runtime.agent_sdk.permissions import Permission

__all__ = ["ClaudeAgentSdk", "SdkApi", "SdkClient", "SdkMissing", "load_sdk"]


class SdkMissing(UserMistake):
    """An ``agent-sdk`` turn ran where the Claude Agent SDK is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "the agent-sdk provider needs the Claude Agent SDK, which is not installed: "
            f"pip install '{EXTRA}'"
        )


class SdkClient(Protocol):
    """What the engine uses of ``ClaudeSDKClient``."""

    async def connect(self) -> None: ...

    async def query(self, prompt: str | AsyncIterable[dict[str, Any]]) -> None: ...

    def receive_messages(self) -> AsyncIterator[Any]: ...

    async def interrupt(self) -> None: ...

    async def disconnect(self) -> None: ...


class SdkApi(Protocol):
    """The SDK as the engine sees it: a client from options, the MCP server
    of kun's bridged tools, kun's permission answers in the SDK's types,
    and the code of an SDK failure."""

    def client(self, options: dict[str, Any]) -> SdkClient: ...

    def mcp_server(self, name: str, tools: Sequence[BridgedTool]) -> Any: ...

    def permission(self, answer: Permission) -> Any: ...

    def failure_code(self, exc: BaseException) -> str | None: ...


class ClaudeAgentSdk:
    """:class:`SdkApi` over the installed ``claude_agent_sdk``."""

    def __init__(self) -> None:
        try:
            import claude_agent_sdk
        except ImportError as exc:
            raise SdkMissing() from exc
        self._sdk = claude_agent_sdk

    def client(self, options: dict[str, Any]) -> SdkClient:
        sdk = self._sdk
        client: SdkClient = sdk.ClaudeSDKClient(options=sdk.ClaudeAgentOptions(**options))
        return client

    def mcp_server(self, name: str, tools: Sequence[BridgedTool]) -> Any:
        sdk = self._sdk
        return sdk.create_sdk_mcp_server(
            name,
            tools=[
                sdk.SdkMcpTool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    handler=tool.handler,
                )
                for tool in tools
            ],
        )

    def permission(self, answer: Permission) -> Any:
        sdk = self._sdk
        if answer.allow:
            return sdk.PermissionResultAllow(updated_input=answer.updated_input or {})
        return sdk.PermissionResultDeny(message=answer.message)

    def failure_code(self, exc: BaseException) -> str | None:
        sdk = self._sdk
        if isinstance(exc, sdk.CLINotFoundError):
            return "agent_sdk_cli_not_found"
        if isinstance(exc, sdk.CLIConnectionError):
            return "agent_sdk_connection_failed"
        if isinstance(exc, sdk.ProcessError):
            return "agent_sdk_process_failed"
        if isinstance(exc, sdk.ClaudeSDKError):
            return "agent_sdk_error"
        return None


def load_sdk(given: object | None = None) -> SdkApi:
    """``given`` (a test's :class:`SdkApi`), else the installed SDK's.
    Raises :class:`SdkMissing` when it is not installed."""
    if given is not None:
        api: SdkApi = given  # type: ignore[assignment]
        return api
    return ClaudeAgentSdk()
