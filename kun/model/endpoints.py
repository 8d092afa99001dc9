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

Gemini (``gemini``) puts the model in the path:
``<base>/models/<model>:streamGenerateContent?alt=sse`` (``:generateContent``
when not streaming), ``/v1beta`` added to a base without a version
(``https://generativelanguage.googleapis.com``). On Vertex AI (a
``vertex`` project and location) the model is Google's publisher model:
``<base>/v1/projects/<p>/locations/<l>/publishers/google/models/<model>:...``,
the base defaulting to the location's host (:func:`vertex_base_url`). A
custom endpoint whose path ends in ``:streamGenerateContent`` or
``:generateContent`` is a Gemini endpoint used as is (``alt=sse`` added for
the streaming one).
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
    "is_gemini_host",
    "is_kimi_host",
    "models_probe_url",
    "resolve_endpoint",
    "vertex_base_url",
]

EndpointFormat = Literal["chat_completions", "responses", "messages", "gemini", "custom_endpoint"]
"""A wire format, or ``custom_endpoint`` (the base URL is the full URL)."""

ENDPOINT_PATHS: dict[WireFormat, str] = {
    "chat_completions": "chat/completions",
    "responses": "responses",
    "messages": "messages",
    "gemini": "models",
}

CUSTOM_SUFFIXES: tuple[tuple[str, WireFormat], ...] = (
    ("/chat/completions", "chat_completions"),
    ("/completions", "chat_completions"),
    ("/responses", "responses"),
    ("/messages", "messages"),
    (":streamgeneratecontent", "gemini"),
    (":generatecontent", "gemini"),
)
"""Accepted path suffixes of a custom endpoint, most specific first."""

DEEPSEEK_HOST = "api.deepseek.com"
KIMI_HOSTS = frozenset({"api.moonshot.ai", "api.moonshot.cn", "api.kimi.com"})
"""Moonshot's API hosts (international, China) and the Kimi coding endpoint
(``https://api.kimi.com/coding/v1``): requests there speak the Kimi dialect
of chat completions (:mod:`kun.model.request.kimi`)."""
GEMINI_HOST = "generativelanguage.googleapis.com"
VERTEX_HOST_SUFFIX = "aiplatform.googleapis.com"

_VERSION = re.compile(r"/(?:v\d+[a-z0-9]*|beta)$", re.IGNORECASE)


class Endpoint(msgspec.Struct, frozen=True, gc=False):
    """A resolved endpoint: the URL requests are posted to, and its format."""

    url: str
    wire_format: WireFormat


def resolve_endpoint(
    base_url: str,
    format: EndpointFormat,
    *,
    model: str = "",
    stream: bool = True,
    vertex: tuple[str, str] | None = None,
) -> Endpoint:
    """The endpoint for ``base_url`` in ``format`` (see the module docstring).
    ``model``, ``stream`` and ``vertex`` (project, location) matter to
    Gemini only, whose URL names the model and the method.

    Raises :class:`EndpointConfigError` for a base that is not an http(s)
    URL, for a custom endpoint whose suffix names no format, and for a
    Gemini endpoint without a model.
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
        if wire == "gemini" and parts.path.lower().endswith(":streamgeneratecontent"):
            parts = parts._replace(query=_with_sse(parts.query))
        return Endpoint(urlunsplit(parts._replace(fragment="")), wire)
    if format == "gemini":
        return _gemini(parts, model, stream, vertex)
    path = _join(parts.path, format)
    return Endpoint(urlunsplit(parts._replace(path=path, fragment="")), format)


def vertex_base_url(location: str) -> str:
    """Vertex AI's host for ``location`` (``global`` has no regional prefix)."""
    if location == "global":
        return f"https://{VERTEX_HOST_SUFFIX}"
    return f"https://{location}-{VERTEX_HOST_SUFFIX}"


def is_gemini_host(url: str) -> bool:
    """Whether ``url`` is Google's Gemini API or a Vertex AI host (the
    format to infer for a provider that names no ``endpoint_format``)."""
    host = (urlsplit(url).hostname or "").lower()
    return host == GEMINI_HOST or host.endswith(VERTEX_HOST_SUFFIX)


def _gemini(
    parts: SplitResult, model: str, stream: bool, vertex: tuple[str, str] | None
) -> Endpoint:
    if not model:
        raise EndpointConfigError("a Gemini endpoint names its model: none was given")
    path = parts.path.rstrip("/")
    name = model.removeprefix("models/")
    if vertex is not None:
        project, location = vertex
        if _VERSION.search(path) is None:
            path = f"{path}/v1"
        path = f"{path}/projects/{project}/locations/{location}/publishers/google/models/{name}"
    else:
        if _VERSION.search(path) is None:
            path = f"{path}/v1beta"
        path = f"{path}/models/{name}"
    method = ":streamGenerateContent" if stream else ":generateContent"
    query = _with_sse(parts.query) if stream else parts.query
    return Endpoint(
        urlunsplit(parts._replace(path=path + method, query=query, fragment="")), "gemini"
    )


def _with_sse(query: str) -> str:
    if "alt=sse" in query.split("&"):
        return query
    return f"{query}&alt=sse" if query else "alt=sse"


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
