"""Every form in which a secret can leak, computed independently of kun's
redactor, so a test can grep any text or bytes for all of them at once."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus


def _aligned_base64(secret: bytes) -> set[str]:
    """The base64 characters fixed by ``secret`` alone, at each of the three
    alignments it can have inside a longer encoded string (``user:key``)."""
    out: set[str] = set()
    for pad in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * pad + secret).decode()
            start = -(-8 * pad // 6)
            end = 8 * (pad + len(secret)) // 6
            out.add(encoded[start:end])
    return out


def leak_forms(secret: str) -> set[str]:
    """The secret raw, stripped, JSON-escaped, ``repr``-escaped (str and
    bytes), percent-encoded and base64-encoded (at every alignment)."""
    forms: set[str] = set()
    for value in {secret, secret.strip()}:
        raw = value.encode()
        forms |= {
            value,
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            repr(value)[1:-1],
            repr(raw)[2:-1],
            quote(value, safe=""),
            quote_plus(value, safe=""),
        }
        forms |= _aligned_base64(raw)
    return {form for form in forms if len(form) >= 6}


def leaks(secret: str, *texts: str | bytes) -> list[str]:
    """The forms of ``secret`` found in any of ``texts`` (empty: no leak)."""
    found = []
    for form in sorted(leak_forms(secret)):
        for text in texts:
            haystack = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
            if form in haystack:
                found.append(form)
                break
    return found
