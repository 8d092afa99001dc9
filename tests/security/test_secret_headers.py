"""A credential in a provider's custom ``headers`` table is a secret even
when its header is not one of the well-known auth headers: a relay that
echoes ``X-Auth-Token`` or an Azure ``Ocp-Apim-Subscription-Key`` in its
401 must not put it in the error message or the log."""

from __future__ import annotations

import logging

import pytest

from kun.model.redact import REDACTED, Redactor, redact_headers
from tests.model.fake_http import Script, client, collect, json_answer
from tests.model.support import error

NAMES = ["X-Auth-Token", "Ocp-Apim-Subscription-Key", "X-Client-Secret", "x-session-password"]


@pytest.mark.parametrize("name", NAMES)
def test_a_secret_named_header_is_redacted(name: str) -> None:
    value = "value-0123456789abcdef"
    assert Redactor.for_request(None, {name: value}).scrub(f"got {value}!") == f"got {REDACTED}!"
    assert redact_headers({name: value, "Accept": "text/plain"}) == {
        name: REDACTED,
        "Accept": "text/plain",
    }


def test_plain_headers_stay_plain() -> None:
    headers = {"User-Agent": "kun", "anthropic-version": "2023-06-01", "Accept": "json"}
    assert redact_headers(headers) == headers
    assert not Redactor.for_request(None, headers)


@pytest.mark.anyio
async def test_a_custom_header_echoed_in_a_401_is_redacted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = "relay-tok-abcdef-0123456789"
    echo = {"error": {"message": f"X-Auth-Token {token} is not valid"}}
    script = Script(json_answer(401, echo))
    with caplog.at_level(logging.DEBUG, logger="kun.model"):
        last = error(await collect(client(script, api_key=None, headers={"X-Auth-Token": token})))
    assert token not in last.message and REDACTED in last.message
    assert caplog.records and token not in caplog.text
