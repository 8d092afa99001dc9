"""Keeping secrets out of logs and error messages.

Everything the model layer writes to a log line or an error message passes
through here first:

* URLs: query parameters whose name contains ``key``, ``token``, ``secret``,
  ``signature``, ``auth`` or ``password`` (``api_key``, ``access_token``,
  ``X-Amz-Signature``, ``auth``...) keep their name and lose their value, and
  so does the password of ``user:password@`` (a proxy URL often carries one).
  The same rule runs over free text, so a URL quoted inside a provider's
  error body is redacted too.
* Bodies: cut to 1000 characters, with a note of how much was cut.
* Known secrets: the API key and the values of auth headers are replaced
  wherever they appear (some relays echo the key back in their errors).

Request bodies are never logged: prompts are private.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = [
    "BODY_LIMIT",
    "REDACTED",
    "Redactor",
    "redact_headers",
    "redact_url",
    "summarize_body",
]

BODY_LIMIT = 1000
"""At most this many characters of a response body reach a log or a message."""

REDACTED = "[redacted]"

_SECRET_NAME = r"[^=&\s#\"'<>]*?(?:key|token|secret|signature|auth|password)[^=&\s#\"'<>]*"
_QUERY_SECRET = re.compile(rf"([?&;]{_SECRET_NAME}=)([^&;\s#\"'<>]*)", re.IGNORECASE)
_USERINFO = re.compile(r"(://[^/\s:@\"'<>]+:)([^/\s@\"'<>]+)(@)")
_SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "x-goog-api-key"}
)
_MIN_SECRET = 4


def redact_url(url: str) -> str:
    """``url`` with secret-looking query values and any userinfo password
    replaced by ``[redacted]``; everything else is kept byte for byte."""
    return _USERINFO.sub(rf"\g<1>{REDACTED}\g<3>", _QUERY_SECRET.sub(rf"\g<1>{REDACTED}", url))


def summarize_body(body: bytes | str, limit: int = BODY_LIMIT) -> str:
    """A body as text, cut to ``limit`` characters (invalid UTF-8 replaced)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers fit for a log: auth and cookie values replaced."""
    return {
        name: REDACTED if name.lower() in _SECRET_HEADERS else value
        for name, value in headers.items()
    }


class Redactor:
    """Scrubs text of the given secrets and of secret-looking URL parts.

    Secrets shorter than four characters are ignored: replacing them would
    shred ordinary words without protecting anything.
    """

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        found = {s for s in secrets if s and len(s) >= _MIN_SECRET}
        self._secrets = tuple(sorted(found, key=len, reverse=True))

    @classmethod
    def for_request(cls, api_key: str | None, headers: Mapping[str, str]) -> Redactor:
        """The redactor for a client: its API key, and the secret parts of its
        auth headers (a ``Bearer`` token without its scheme word)."""
        secrets: list[str | None] = [api_key]
        for name, value in headers.items():
            if name.lower() in _SECRET_HEADERS:
                secrets.append(value)
                secrets.append(value.partition(" ")[2])
        return cls(secrets)

    def text(self, text: str) -> str:
        """``text`` with every known secret and secret-looking URL part redacted."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return redact_url(text)

    def body(self, body: bytes | str, limit: int = BODY_LIMIT) -> str:
        """A response body fit for a log or a message: redacted, then cut."""
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return summarize_body(self.text(text), limit)
