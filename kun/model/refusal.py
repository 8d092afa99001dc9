"""Whether a refused connection was refused by this machine or its network.

A connection refused by a loopback, private or link-local address means
nothing is listening there: a local server (Ollama, LM Studio, vLLM, a
proxy) that is not running. Waiting does not start it, so the client says
so at once instead of retrying for many seconds in silence. A refusal by a
remote address keeps the retry policy (a provider's load balancer may be
restarting); each of those retries is a visible line.

"Local" is decided by the URL's host when it is an address or a
``localhost`` name, else by the addresses the operating system reports
refusing (asyncio names them in the error: "Connect call failed
('127.0.0.1', 8080)"), which covers any name that resolves to a local
address without a second lookup. A refusal whose address cannot be told is
treated as remote: the retry policy applies, visibly.
"""

from __future__ import annotations

import errno
import ipaddress
import re
from collections.abc import Iterator

import httpx

__all__ = ["is_local_host", "refused_locally"]

_REFUSED_AT = re.compile(r"\('([0-9A-Fa-f:.%]+)'")


def refused_locally(exc: BaseException, url: str) -> bool:
    """Whether ``exc`` (an httpx connect error for ``url``, the endpoint or
    the proxy) is a connection refused by a local address."""
    refusals = [e for e in _causes(exc) if _is_refusal(e)]
    if not refusals:
        return False
    if is_local_host(httpx.URL(url).host):
        return True
    addresses = [m.group(1) for e in refusals if (m := _REFUSED_AT.search(str(e)))]
    return bool(addresses) and all(_is_local_address(a) for a in addresses)


def is_local_host(host: str) -> bool:
    """``localhost``, a name under ``.localhost``, or a local address."""
    host = host.strip("[]").lower().rstrip(".")
    return host == "localhost" or host.endswith(".localhost") or _is_local_address(host)


def _is_local_address(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text.partition("%")[0])
    except ValueError:
        return False
    return (
        address.is_loopback or address.is_private or address.is_link_local or address.is_unspecified
    )


def _is_refusal(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionRefusedError) or (
        isinstance(exc, OSError) and exc.errno == errno.ECONNREFUSED
    )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, its causes and contexts, and the members of any exception
    group among them, each once."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
