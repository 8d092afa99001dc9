"""A known secret is redacted in every form it can take on its way to a
message, in one cheap pass."""

from __future__ import annotations

import base64
import json
import random
import string
from urllib.parse import quote

import pytest

from kun.model.redact import REDACTED, Redactor
from tests.integration.secret_forms import leak_forms, leaks

KEY = "sk-proj-Zq81xVb3Kp0sT7uW2yE5"
ODD = "k3y/with+odd=chars&é\x01"


@pytest.mark.parametrize("secret", [KEY, f"{KEY}\n", f" {KEY}\t", ODD])
def test_every_form_of_a_secret_is_redacted(secret: str) -> None:
    redactor = Redactor([secret])
    for form in sorted(leak_forms(secret)):
        scrubbed = redactor.scrub(f"before {form} after")
        assert not leaks(secret, scrubbed), (form, scrubbed)
        assert scrubbed.startswith("before ") and scrubbed.endswith(" after")


@pytest.mark.parametrize("user", ["", "u", "me", "user", "apikey"])
def test_basic_auth_of_user_and_key_is_redacted(user: str) -> None:
    header = "Basic " + base64.b64encode(f"{user}:{KEY}".encode()).decode()
    scrubbed = Redactor([KEY]).scrub(f"sent {header}")
    assert not leaks(KEY, scrubbed)
    assert REDACTED in scrubbed


def test_forms_seen_in_the_wild() -> None:
    redactor = Redactor([f"{KEY}\n"])
    header = b"Bearer " + KEY.encode() + b"\n"
    httpx_message = f"Illegal header value {header!r}"
    in_json = json.dumps({"message": httpx_message})
    url = f"https://relay.test/v1?api_key={quote(KEY, safe='')}&x=1"
    for text in (httpx_message, in_json, url, repr(httpx_message)):
        assert not leaks(KEY, redactor.scrub(text)), text


def test_a_reversed_secret_is_redacted() -> None:
    """A command can print a token backwards (``echo $T | rev``); the model
    would read it right way round."""
    redactor = Redactor([f"{KEY}\n"])
    for text in (f"got {KEY[::-1]}\n", json.dumps({"out": KEY[::-1]})):
        scrubbed = redactor.scrub(text)
        assert KEY[::-1] not in scrubbed and REDACTED in scrubbed


def test_scrub_keeps_urls_text_redacts_them() -> None:
    redactor = Redactor([KEY])
    line = "see https://h.test/?token=abc and " + KEY
    assert redactor.scrub(line) == f"see https://h.test/?token=abc and {REDACTED}"
    assert redactor.text(line) == f"see https://h.test/?token={REDACTED} and {REDACTED}"


def test_a_basic_header_and_a_proxy_password_are_known_secrets() -> None:
    basic = base64.b64encode(b"me:hunter2-hunter2").decode()
    redactor = Redactor.for_request(
        None, {"Proxy-Authorization": f"Basic {basic}"}, "http://me:pa%24%24word1@proxy.test"
    )
    text = redactor.scrub("hunter2-hunter2 pa$$word1 pa%24%24word1")
    assert text == f"{REDACTED} {REDACTED} {REDACTED}"


def test_an_empty_redactor_changes_nothing() -> None:
    assert not Redactor([None, "", "ab"])
    assert Redactor([]).scrub("ab sk-") == "ab sk-"


def test_scrubbing_30_kb_with_many_secrets_finds_the_one_at_the_end() -> None:
    """Correctness only: speed is for benchmarks, not timed assertions."""
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits
    secrets = ["sk-" + "".join(rng.choices(alphabet, k=48)) for _ in range(12)]
    redactor = Redactor(secrets)
    output = "".join(rng.choices(string.printable, k=30 * 1024)) + secrets[5]
    scrubbed = redactor.scrub(output)
    assert scrubbed.endswith(REDACTED)
    assert not any(secret in scrubbed for secret in secrets)
