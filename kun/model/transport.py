"""The edge between httpx and the model layer: every httpx exception is
translated here, once, into :mod:`kun.model.errors`.

* A transport timeout is an :class:`~kun.model.errors.APITimeoutError`, any
  other transport failure an :class:`~kun.model.errors.APIConnectionError`
  (both retryable), with a hint to check the proxy when one is configured.
* A connection refused by a local address (:mod:`kun.model.refusal`) is a
  :class:`~kun.model.errors.ConnectionRefusedLocally`, never retried:
  "nothing is listening at http://127.0.0.1:8080 - is the server running?".
* A request httpx refuses to send (``LocalProtocolError``: h11 found an
  illegal header value; ``InvalidURL``) is a
  :class:`~kun.model.errors.ClientConfigError`, never retried: sending the
  same request again fails the same way. Its message is kun's own: httpx's
  quotes the offending header, API key included.
* Headers are checked before anything is built (:func:`header_problem`),
  with the rule the configuration applies to API keys
  (:func:`kun.config.keys.value_problem`), so a client made without the
  configuration (a library caller, a test) fails the same clear way, and
  the HTTP library, its debug log included, never sees the bad value.

:data:`TRACE_HEADERS` are the headers of the trace the current model call
belongs to (W3C ``traceparent``), added to the provider request: set by
:mod:`kun.observe` around a traced call only, so unset unless tracing is on.

Messages here may still quote httpx's text for transport failures; the
client passes every message through its :class:`~kun.model.redact.Redactor`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import httpx

from kun.config.keys import value_problem
from kun.model.errors import (
    APIConnectionError,
    APITimeoutError,
    ChatProviderError,
    ClientConfigError,
    ConnectionRefusedLocally,
)
from kun.model.redact import redact_url
from kun.model.refusal import refused_locally

__all__ = ["TRACE_HEADERS", "header_problem", "translate_errors"]

TRACE_HEADERS: ContextVar[Mapping[str, str] | None] = ContextVar("kun_trace_headers", default=None)

_KEY_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "x-goog-api-key"})
_UNSENDABLE = (
    "kun did not send the request to {target}: httpx refused it before it left "
    "(an invalid header value or URL). Check the variable holding the API key and the "
    "provider's headers and base_url in kun.toml; not retrying, it cannot succeed"
)


def header_problem(headers: Mapping[str, str]) -> ClientConfigError | None:
    """The error for the first header whose value cannot be sent, naming the
    header (or the API key) and never quoting the value; ``None`` if all can."""
    for name, value in headers.items():
        secret = name.lower() in _KEY_HEADERS
        if name.lower() == "authorization":
            scheme, _, credential = value.partition(" ")
            problem = value_problem(scheme) or value_problem(credential)
        else:
            problem = value_problem(value, spaces=not secret)
        if problem is not None:
            what = "the API key" if secret else f"the value of the header {name}"
            return ClientConfigError(
                f"kun cannot send {what}: it {problem}. Fix the variable that holds it "
                "(or the headers in kun.toml); not retrying, it cannot succeed"
            )
    return None


@contextmanager
def translate_errors(target: str, proxy: str | None = None) -> Iterator[None]:
    """Run a request or a read, raising the model layer's errors for httpx's.
    ``target`` is the URL named in messages (redacted here); ``proxy`` the
    configured proxy, named (redacted) in transport-failure hints."""
    target = redact_url(target)
    try:
        yield
    except httpx.TimeoutException as exc:
        raise APITimeoutError(
            _transport_message("timed out talking to", target, exc, proxy)
        ) from exc
    except (httpx.LocalProtocolError, httpx.InvalidURL) as exc:
        raise ClientConfigError(_UNSENDABLE.format(target=target)) from exc
    except httpx.ConnectError as exc:
        if refused_locally(exc, proxy or target):
            raise ConnectionRefusedLocally(_nobody_listening(target, proxy)) from exc
        raise APIConnectionError(
            _transport_message("could not talk to", target, exc, proxy)
        ) from exc
    except httpx.TransportError as exc:
        raise APIConnectionError(
            _transport_message("could not talk to", target, exc, proxy)
        ) from exc
    except httpx.HTTPError as exc:
        raise ChatProviderError(
            f"unreadable response from {target}: {exc}", code="invalid_response"
        ) from exc


def _nobody_listening(target: str, proxy: str | None) -> str:
    if proxy is not None:
        where, what = f"the proxy {redact_url(proxy)}", "is the proxy running?"
    else:
        url = httpx.URL(target)
        where, what = (
            str(url.copy_with(path="", query=None, fragment=None)),
            "is the server running?",
        )
    return (
        f"nothing is listening at {where} \u2014 {what} (the connection was refused; not retrying)"
    )


def _transport_message(what: str, target: str, exc: httpx.HTTPError, proxy: str | None) -> str:
    detail = str(exc) or type(exc).__name__
    message = f"{what} {target}: {detail}"
    if proxy is not None:
        message += (
            f". A proxy is configured ({redact_url(proxy)}): check that it is "
            "running and lets this host through"
        )
    return message
