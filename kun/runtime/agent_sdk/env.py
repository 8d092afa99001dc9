"""The environment the ``claude`` process gets: the subscription's, never a
paid key's.

Claude Code picks its credentials in an order (an API key, a bearer token,
a key from a file descriptor or a cloud provider's switch all come before
the subscription's OAuth token), so a variable left in kun's environment
for another purpose (``ANTHROPIC_API_KEY`` for kun's own ``anthropic``
provider) would silently bill the turn per token while the user thinks the
subscription pays, or send the token to another host. These seven are
removed (:data:`AUTH_OVERRIDE_VARIABLES`):

* ``ANTHROPIC_API_KEY`` — a pay-as-you-go API key; wins over everything.
* ``ANTHROPIC_AUTH_TOKEN`` — a bearer token for a gateway; wins over OAuth.
* ``ANTHROPIC_BASE_URL`` — another host, which would receive the token.
* ``CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR`` — an API key read from a file
  descriptor.
* ``CLAUDE_CODE_USE_BEDROCK``, ``CLAUDE_CODE_USE_VERTEX``,
  ``CLAUDE_CODE_USE_FOUNDRY`` — route every call to a cloud provider's
  billing instead.

The SDK starts ``claude`` with kun's environment *merged under* the
options' ``env`` (it cannot be told to drop a variable), so "removed"
means overridden with an empty value, which Claude Code reads as unset.
The subscription token, when the provider names a variable for it
(``api_key_env``, e.g. ``CLAUDE_CODE_OAUTH_TOKEN`` from ``claude
setup-token``), is passed as ``CLAUDE_CODE_OAUTH_TOKEN``; without one
``claude`` uses the login it keeps itself. Pure: the environment is passed
in.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["AUTH_OVERRIDE_VARIABLES", "OAUTH_TOKEN_VARIABLE", "child_environment", "sdk_env"]

AUTH_OVERRIDE_VARIABLES: tuple[str, ...] = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
)
OAUTH_TOKEN_VARIABLE = "CLAUDE_CODE_OAUTH_TOKEN"


def sdk_env(environ: Mapping[str, str], *, token_env: str | None = None) -> dict[str, str]:
    """The ``env`` option for the SDK given kun's ``environ``: each of the
    seven variables emptied (whether or not it is set here: the child may
    be started from another environment than the one inspected), and the
    subscription token from ``token_env`` when it names a set variable."""
    env = dict.fromkeys(AUTH_OVERRIDE_VARIABLES, "")
    token = environ.get(token_env) if token_env else None
    if token:
        env[OAUTH_TOKEN_VARIABLE] = token
    return env


def child_environment(environ: Mapping[str, str], overrides: Mapping[str, str]) -> dict[str, str]:
    """What the ``claude`` process sees: ``environ`` under ``overrides`` (as
    the SDK merges them), emptied variables dropped."""
    merged = {**environ, **overrides}
    return {k: v for k, v in merged.items() if not (k in AUTH_OVERRIDE_VARIABLES and v == "")}
