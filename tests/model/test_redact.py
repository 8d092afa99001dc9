"""Secrets out of logs and messages; bodies cut to 1000 characters."""

from __future__ import annotations

import pytest

from kun.model.redact import BODY_LIMIT, Redactor, redact_headers, redact_url, summarize_body


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("https://x.test/v1?key=AIzaSy123&alt=sse", "https://x.test/v1?key=[redacted]&alt=sse"),
        ("https://x.test/v1?api_key=s1&access_token=t2", "https://x.test/v1?api_key=[redacted]&access_token=[redacted]"),
        ("https://s3.test/o?X-Amz-Signature=abc&X-Amz-Date=1", "https://s3.test/o?X-Amz-Signature=[redacted]&X-Amz-Date=1"),
        ("https://x.test/?auth=a;password=b", "https://x.test/?auth=[redacted];password=[redacted]"),
        ("https://x.test/?client_secret=c#frag", "https://x.test/?client_secret=[redacted]#frag"),
        ("http://user:hunter22@proxy.test:8080", "http://user:[redacted]@proxy.test:8080"),
        ("https://x.test/v1/chat/completions?api-version=2024", "https://x.test/v1/chat/completions?api-version=2024"),
        ("https://x.test/key/token?page=2", "https://x.test/key/token?page=2"),
    ],
)  # fmt: skip
def test_redact_url(url: str, clean: str) -> None:
    assert redact_url(url) == clean


def test_summarize_body_cuts_and_says_how_much() -> None:
    assert summarize_body(b"  short \n") == "short"
    long = "é" * 1500
    cut = summarize_body(long)
    assert cut.startswith("é" * BODY_LIMIT)
    assert cut.endswith("(500 more characters)")
    assert summarize_body(b"\xff\xfeok") == "\ufffd\ufffdok"


def test_redactor_scrubs_secrets_and_urls() -> None:
    redactor = Redactor.for_request(
        "sk-abcdef123456", {"Authorization": "Bearer tok-999999", "x-other": "fine"}
    )
    text = redactor.text("key sk-abcdef123456 and tok-999999 at https://h.test/?token=zzz and fine")
    assert "sk-abcdef123456" not in text
    assert "tok-999999" not in text
    assert "zzz" not in text
    assert text.endswith("and fine")


def test_short_or_missing_secrets_are_ignored() -> None:
    assert Redactor([None, "", "ab"]).text("ab cd") == "ab cd"


def test_redactor_body_redacts_then_cuts() -> None:
    redactor = Redactor(["secret-value-1"])
    body = b"secret-value-1 " + b"x" * 3000
    out = redactor.body(body)
    assert "secret-value-1" not in out
    assert out.startswith("[redacted] ")
    assert "more characters" in out


def test_redact_headers() -> None:
    assert redact_headers({"Authorization": "Bearer x", "X-Api-Key": "k", "Accept": "a"}) == {
        "Authorization": "[redacted]",
        "X-Api-Key": "[redacted]",
        "Accept": "a",
    }
