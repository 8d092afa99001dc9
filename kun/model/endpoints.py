"""Where a model request goes: base URL + wire format -> the endpoint URL.

Formats: ``chat_completions`` (path ``chat/completions``), ``responses``
(``responses``), ``messages`` (Anthropic, ``messages``) and
``custom_endpoint``: the base URL *is* the full URL (relays whose paths are
not ``/v1/...``, e.g. ``.../api/coding/paas/v4/chat/completions``) and the
wire format is read from its suffix: ``/chat/completions`` or
``/completions`` -> chat completions, ``/responses`` -> responses,
``/messages`` -> messages. Any other suffix is a configuration error raised
before anything is sent: guessing a format would send a body the server
cannot read.

Joining follows the convention of each family's own SDK, and never doubles a
version:

* OpenAI style (chat completions, responses): the base includes its version
  (``https://api.openai.com/v1``, ``.../api/paas/v4``, ``.../v1beta/openai``,
  ``https://api.deepseek.com/beta``); the path is appended. A bare host gets
  ``/v1``.
* Anthropic style (messages): the base usually stops before the version
  (``https://api.anthropic.com``, ``https://api.deepseek.com/anthropic``);
  ``/v1`` is added unless the base already ends in a version segment
  (``/v1``, ``/v2``, ``/beta``).

A base that already ends with the endpoint path is used as is. The query
string of the base (Azure's ``api-version``) is kept.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import SplitResult, urlsplit, urlunsplit

import msgspec

from kun.contracts.model import WireFormat
from kun.model.errors import EndpointConfigError

__all__ = [
    "CUSTOM_SUFFIXES",
    "ENDPOINT_PATHS",
    "Endpoint",
    "EndpointFormat",
    "infer_wire_format",
    "is_deepseek_host",
    "is_kimi_host",
    "models_probe_url",
    "resolve_endpoint",
]

EndpointFormat = Literal["chat_completions", "responses", "messages", "custom_endpoint"]
"""A wire format, or ``custom_endpoint`` (the base URL is the full URL)."""

ENDPOINT_PATHS: dict[WireFormat, str] = {
    "chat_completions": "chat/completions",
    "responses": "responses",
    "messages": "messages",
}

CUSTOM_SUFFIXES: tuple[tuple[str, WireFormat], ...] = (
    ("/chat/completions", "chat_completions"),
    ("/completions", "chat_completions"),
    ("/responses", "responses"),
    ("/messages", "messages"),
)
"""Accepted path suffixes of a custom endpoint, most specific first."""

DEEPSEEK_HOST = "api.deepseek.com"
KIMI_HOSTS = frozenset({"api.moonshot.ai", "api.moonshot.cn", "api.kimi.com"})
"""Moonshot's API hosts (international, China) and the Kimi coding endpoint
(``https://api.kimi.com/coding/v1``): requests there speak the Kimi dialect
of chat completions (:mod:`kun.model.request.kimi`)."""

_VERSION = re.compile(r"/(?:v\d+[a-z0-9]*|beta)$", re.IGNORECASE)


class Endpoint(msgspec.Struct, frozen=True, gc=False):
    """A resolved endpoint: the URL requests are posted to, and its format."""

    url: str
    wire_format: WireFormat


def resolve_endpoint(base_url: str, format: EndpointFormat) -> Endpoint:
    """The endpoint for ``base_url`` in ``format`` (see the module docstring).

    Raises :class:`EndpointConfigError` for a base that is not an http(s)
    URL, and for a custom endpoint whose suffix names no format.
    """
    parts = _split(base_url)
    if format == "custom_endpoint":
        wire = infer_wire_format(base_url)
        if wire is None:
            accepted = ", ".join(suffix for suffix, _ in CUSTOM_SUFFIXES)
            raise EndpointConfigError(
                f"cannot tell the wire format of the custom endpoint {base_url!r}: "
                f"its path must end with one of {accepted}"
            )
        return Endpoint(urlunsplit(parts._replace(fragment="")), wire)
    path = _join(parts.path, format)
    return Endpoint(urlunsplit(parts._replace(path=path, fragment="")), format)


def infer_wire_format(url: str) -> WireFormat | None:
    """The wire format a full endpoint URL's path suffix names, if any."""
    path = urlsplit(url.strip()).path.rstrip("/").lower()
    for suffix, wire in CUSTOM_SUFFIXES:
        if path.endswith(suffix):
            return wire
    return None


def models_probe_url(base_url: str) -> str:
    """``GET`` target of the reachability probe: the base with a trailing
    ``/beta`` or ``/vN`` stripped, plus ``/v1/models``."""
    parts = _split(base_url)
    path = parts.path.rstrip("/")
    while (match := _VERSION.search(path)) is not None:
        path = path[: match.start()]
    return urlunsplit(parts._replace(path=f"{path}/v1/models", query="", fragment=""))


def is_deepseek_host(url: str) -> bool:
    """Whether ``url`` points at DeepSeek's official API host."""
    return (urlsplit(url).hostname or "").lower() == DEEPSEEK_HOST


def is_kimi_host(url: str) -> bool:
    """Whether ``url`` points at one of Moonshot's own hosts (:data:`KIMI_HOSTS`)."""
    return (urlsplit(url).hostname or "").lower() in KIMI_HOSTS


def _split(base_url: str) -> SplitResult:
    parts = urlsplit(base_url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise EndpointConfigError(f"the base URL {base_url!r} is not an http(s) URL")
    return parts


def _join(base_path: str, format: WireFormat) -> str:
    path = base_path.rstrip("/")
    tail = ENDPOINT_PATHS[format]
    if path.lower().endswith(f"/{tail}"):
        return path
    if format == "messages":
        versioned = _VERSION.search(path) is not None
    else:
        versioned = bool(path)
    return f"{path}/{tail}" if versioned else f"{path}/v1/{tail}"
