"""Keeping secrets out of logs, error messages and tool results.

Everything the model layer writes to a log line or an error message passes
through here first, and so does every tool result before it is recorded:

* Known secrets (the API keys, the values of auth headers, a proxy
  password, the values of secret-named environment variables) are replaced
  in every form they take on the way to a message: raw; without surrounding
  whitespace; reversed (``… | rev``), in each form below as well; escaped
  as JSON (``\\n``, ``\\u0001``, ``\\/``) or as a Python ``repr`` of text
  or bytes (``\\x01``; httpx quotes an illegal header that way), once or
  twice (a ``repr`` quoted in JSON); percent-encoded (as in a
  URL or a form); and base64-encoded (an ``Authorization: Basic`` header of
  ``user:key``), at each of the three alignments the secret can have inside
  a longer encoded string, standard and URL-safe alphabets. All forms of all
  secrets are one compiled pattern, built once per redactor: scrubbing 30 KB
  of tool output costs a single scan.
* URLs (:meth:`Redactor.text` and :func:`redact_url`, not tool output):
  query parameters whose name contains ``key``, ``token``, ``secret``,
  ``signature``, ``auth`` or ``password`` keep their name and lose their
  value, and so does the password of ``user:password@``. The same rule runs
  over free text, so a URL quoted inside a provider's error body is redacted
  too. Tool output keeps its URLs: source code is full of ``?token=``.
* Bodies: cut to 1000 characters, with a note of how much was cut.

Request bodies are never logged: prompts are private.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus, unquote, urlsplit

__all__ = [
    "BODY_LIMIT",
    "REDACTED",
    "Redactor",
    "redact_headers",
    "redact_url",
    "secret_forms",
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
_SECRET_HEADER_NAME = re.compile(r"key|token|secret|signature|auth|password|cookie", re.IGNORECASE)
_MIN_SECRET = 4
_MIN_ENCODED = 8
_PERCENT = re.compile(r"%[0-9A-F]{2}")


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
    return {name: REDACTED if _secret_header(name) else value for name, value in headers.items()}


def _secret_header(name: str) -> bool:
    """A header that carries a credential: the known ones, and any whose name
    says so (``X-Auth-Token``, ``Ocp-Apim-Subscription-Key``), as a
    provider's ``headers`` table may add."""
    return name.lower() in _SECRET_HEADERS or _SECRET_HEADER_NAME.search(name) is not None


def secret_forms(secret: str) -> frozenset[str]:
    """Every string by which ``secret`` can show in a message (see the module
    docstring); empty for a secret under four characters."""
    forms: set[str] = set()
    for value in {secret, secret.strip(), secret.strip()[::-1]}:
        if len(value) < _MIN_SECRET:
            continue
        escaped = {value, value.replace("/", "\\/"), *_escapes(value)}
        escaped |= {twice for once in escaped for twice in _escapes(once)}
        forms |= escaped | _percent(value)
        forms |= {part for part in _base64(value.encode()) if len(part) >= _MIN_ENCODED}
    return frozenset(form for form in forms if len(form) >= _MIN_SECRET)


def _escapes(value: str) -> set[str]:
    return {
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        repr(value)[1:-1],
        repr(value.encode("utf-8", "backslashreplace"))[2:-1],
    }


def _percent(value: str) -> set[str]:
    upper = {quote(value, safe=""), quote(value), quote_plus(value, safe=""), quote_plus(value)}
    return upper | {_PERCENT.sub(lambda m: m.group().lower(), form) for form in upper}


def _base64(raw: bytes) -> set[str]:
    """The characters of every base64 encoding of a string holding ``raw``
    that ``raw`` alone decides: ``raw`` after 0, 1 or 2 other bytes."""
    parts: set[str] = set()
    for offset in range(3):
        start = -(-8 * offset // 6)
        end = 8 * (offset + len(raw)) // 6
        padded = b"\0" * offset + raw
        parts.add(base64.b64encode(padded).decode()[start:end])
        parts.add(base64.urlsafe_b64encode(padded).decode()[start:end])
    return parts


class Redactor:
    """Scrubs text of the given secrets, in every form, and (:meth:`text`)
    of secret-looking URL parts.

    Secrets shorter than four characters are ignored: replacing them would
    shred ordinary words without protecting anything.
    """

    __slots__ = ("_pattern", "longest")

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if secret:
                forms |= secret_forms(secret)
        ordered = sorted(forms, key=lambda form: (-len(form), form))
        self.longest = len(ordered[0]) if ordered else 0
        """The length of the longest form: a stream scrubbed in pieces holds
        back this much less one, so no secret is cut in two."""
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @classmethod
    def for_request(
        cls, api_key: str | None, headers: Mapping[str, str], proxy: str | None = None
    ) -> Redactor:
        """The redactor for a client: its API key, the secret parts of its
        auth headers (a ``Bearer`` token without its scheme word, the password
        inside a ``Basic`` one) and the password of its proxy."""
        secrets: list[str | None] = [api_key]
        for name, value in headers.items():
            if _secret_header(name):
                scheme, _, credential = value.partition(" ")
                secrets += [value, credential]
                if scheme.lower() == "basic":
                    secrets.append(_basic_password(credential))
        if proxy is not None:
            password = urlsplit(proxy).password
            secrets += [password, unquote(password or "")]
        return cls(secrets)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def scrub(self, text: str) -> str:
        """``text`` with every form of every known secret redacted (and
        nothing else: tool output keeps its URLs)."""
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)

    def scrub_stream(self, text: str) -> tuple[str, str]:
        """``text`` read so far from a stream, split where no secret can
        straddle: the scrubbed head, final, and the raw tail (shorter than
        the longest form) to hold back until more comes or the stream ends."""
        if self._pattern is None:
            return text, ""
        cut = max(0, len(text) - self.longest + 1)
        for match in self._pattern.finditer(text):
            if match.start() >= cut:
                break
            cut = max(cut, match.end())
        return self._pattern.sub(REDACTED, text[:cut]), text[cut:]

    def text(self, text: str) -> str:
        """``text`` with every known secret and secret-looking URL part redacted."""
        return redact_url(self.scrub(text))

    def body(self, body: bytes | str, limit: int = BODY_LIMIT) -> str:
        """A response body fit for a log or a message: redacted, then cut."""
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return summarize_body(self.text(text), limit)


def _basic_password(credential: str) -> str | None:
    try:
        decoded = base64.b64decode(credential, validate=True).decode("utf-8")
    except ValueError:
        return None
    return decoded.partition(":")[2] or None
