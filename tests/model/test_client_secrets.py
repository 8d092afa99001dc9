"""A key that cannot be sent fails once, as a configuration error, and no
form of a secret reaches an error chunk or a log line: not raw, not escaped
(``\\n``, ``\\x01``, ``\\u0001``), not base64 (Basic auth), not
percent-encoded, not in a URL."""

from __future__ import annotations

import base64
import json
import logging
import random

import httpx
import pytest

from kun.model.client import HttpModelClient
from kun.model.errors import error_from_chunk
from kun.model.retry import RetryPolicy
from kun.testing.fake_provider import FakeProvider
from tests.integration.secret_forms import leaks

from .fake_http import Script, Sleeps, client, collect, failing, json_answer
from .support import error

pytestmark = pytest.mark.anyio

KEY = "sk-proj-Zq81xVb3Kp0sT7uW2yE5"


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records]


@pytest.mark.parametrize("bad", [f"{KEY}\n", f"{KEY[:9]}\x01{KEY[9:]}", f" {KEY}"])
async def test_a_key_h11_refuses_fails_once_without_showing_it(
    bad: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sleeps = Sleeps()
    async with FakeProvider([], format="chat_completions") as provider:
        model = HttpModelClient(
            "fake", "m", provider.base_url, api_key=bad, sleep=sleeps, rng=random.Random(0)
        )
        async with model:
            last = error(await collect(model))  # type: ignore[arg-type]
        assert provider.requests == []
    assert sleeps.delays == [] and model.last_stats is not None
    assert model.last_stats.attempts == 1
    assert last.code == "client_config_error"
    assert not error_from_chunk(last).is_retryable
    assert "API key" in last.message
    assert not leaks(bad, last.message, *_logged(caplog))


async def test_a_local_protocol_error_is_not_retried() -> None:
    illegal = httpx.LocalProtocolError(f"Illegal header value {b'Bearer ' + KEY.encode()!r}")
    script = Script(failing(illegal))
    last = error(await collect(client(script, api_key=KEY)))
    assert script.posts == 1
    assert last.code == "client_config_error"
    assert not leaks(KEY, last.message)


async def test_a_non_ascii_key_is_an_error_chunk_not_an_exception() -> None:
    script = Script(json_answer(200, {}))
    bad = f"{KEY[:9]}é{KEY[9:]}"
    last = error(await collect(client(script, api_key=bad)))
    assert script.posts == 0
    assert last.code == "client_config_error"
    assert not leaks(bad, last.message)


async def test_a_key_echoed_by_a_relay_is_redacted_in_every_form(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    basic = base64.b64encode(f"user:{KEY}".encode()).decode()
    odd = base64.b64encode(f"me:{KEY}".encode()).decode()
    message = (
        f"bad key {KEY}; escaped {json.dumps(KEY + chr(1))}; repr {(KEY + chr(10)).encode()!r}; "
        f"basic {basic} / {odd}; raw b64 {base64.b64encode(KEY.encode()).decode()}; "
        f"url https://relay.test/v1?k={KEY.replace('-', '%2D')}"
    )
    body = {"error": {"message": message, "type": "invalid_request_error"}}
    script = Script(json_answer(401, body))
    last = error(await collect(client(script, api_key=KEY)))
    assert last.code == "http_401"
    assert "bad key [redacted]" in last.message
    assert not leaks(KEY, last.message, *_logged(caplog))


async def test_a_proxy_password_is_redacted_wherever_it_shows() -> None:
    password = "pr0xy-Pa55word!"
    illegal = httpx.ProxyError(
        f"407 from proxy: Proxy-Authorization Basic "
        f"{base64.b64encode(f'me:{password}'.encode()).decode()} for me:{password}@proxy"
    )
    http = httpx.AsyncClient(transport=Script(failing(illegal)).transport())
    model = HttpModelClient(
        "example",
        "m",
        "https://api.example.test/v1",
        api_key=KEY,
        http=http,
        shared_proxy="http://me:pr0xy-Pa55word%21@proxy.test:3128",
        retry=RetryPolicy(max_attempts=1),
    )
    last = error(await collect(model))
    assert not leaks(password, last.message), last.message
