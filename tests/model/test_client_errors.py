"""What a failing call tells its caller: the class behind the code, an
actionable message, the DeepSeek probe, and no secret anywhere."""

from __future__ import annotations

import logging

import httpx
import pytest

from kun.model.errors import APIContextOverflowError, APIStatusError, error_from_chunk

from .fake_http import Script, client, collect, failing, json_answer, sse
from .support import error, fixture, text

pytestmark = pytest.mark.anyio

KEY = "sk-live-9f8e7d6c5b4a3f2e1d0c"
DEEPSEEK = "https://api.deepseek.com/beta"
DOWN = {"error": {"message": "Service Unavailable", "type": "server_error"}}


@pytest.mark.parametrize(
    ("fmt", "status", "body"),
    [
        (
            "chat_completions",
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 128000 tokens. However, "
                    "you requested about 131000 tokens.",
                    "type": "invalid_request_error",
                    "code": "context_length_exceeded",
                }
            },
        ),
        (
            "messages",
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 208310 tokens > 200000 maximum",
                },
            },
        ),
    ],
)
async def test_rw20_context_overflow_in_an_http_body(fmt: str, status: int, body: object) -> None:
    script = Script(json_answer(status, body))
    last = error(await collect(client(script, fmt)))  # type: ignore[arg-type]
    assert script.posts == 1
    assert last.code == "context_overflow"
    assert isinstance(error_from_chunk(last), APIContextOverflowError)


async def test_rw20_context_overflow_in_a_stream_error_event_after_text() -> None:
    chunks = await collect(client(Script(sse(fixture("cc_error_frame.sse")))))
    assert text(chunks) == "Partial"
    last = error(chunks)
    assert last.code == "context_overflow"
    assert "requested about 1200000 tokens" in last.message


async def test_rw20_context_overflow_in_a_responses_error_event() -> None:
    script = Script(sse(fixture("resp_error_event.sse")))
    last = error(await collect(client(script, "responses")))
    assert script.posts == 1
    assert last.code == "context_overflow"


async def test_kun_own_stream_codes_pass_through() -> None:
    truncated = fixture("cc_rw09_truncated_stream.sse")
    last = error(await collect(client(Script(sse(truncated)))))
    assert last.code == "stream_truncated"


@pytest.mark.parametrize(
    ("probe", "says"),
    [
        (json_answer(200, {"data": []}), "DeepSeek is reachable"),
        (json_answer(503, DOWN), "DeepSeek looks down"),
        (failing(httpx.ConnectError("Name or service not known")), "DeepSeek is unreachable"),
    ],
)
async def test_deepseek_5xx_probes_models(probe: object, says: str) -> None:
    script = Script(json_answer(500, DOWN), routes={"/v1/models": probe})  # type: ignore[dict-item]
    last = error(await collect(client(script, base_url=DEEPSEEK)))
    assert str(script.requests[0].url) == "https://api.deepseek.com/beta/chat/completions"
    assert [str(r.url) for r in script.requests if r.method == "GET"] == [
        "https://api.deepseek.com/v1/models"
    ]
    assert says in last.message
    assert last.code == "http_500"
    failure = error_from_chunk(last)
    assert isinstance(failure, APIStatusError) and failure.is_retryable


async def test_deepseek_probe_runs_once_after_the_retries() -> None:
    script = Script(json_answer(503, DOWN), routes={"/v1/models": json_answer(200, {})})
    last = error(await collect(client(script, base_url=DEEPSEEK)))
    assert script.posts == 5
    assert sum(r.method == "GET" for r in script.requests) == 1
    assert "gave up after 5 attempts" in last.message


async def test_other_hosts_are_not_probed() -> None:
    script = Script(json_answer(500, DOWN))
    await collect(client(script))
    assert all(r.method == "POST" for r in script.requests)


async def test_the_api_key_never_reaches_a_message_or_a_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "auth"}}
    base = "https://relay.example.test/v1?api_key=query-secret-123&region=eu"
    script = Script(json_answer(401, echo))
    with caplog.at_level(logging.DEBUG, logger="kun.model"):
        last = error(await collect(client(script, base_url=base, api_key=KEY)))
    assert caplog.records
    for text_ in [last.message, caplog.text]:
        assert KEY not in text_
        assert "query-secret-123" not in text_
    assert "api_key=[redacted]" in last.message
    assert "region=eu" in last.message
    assert "Check the API key" in last.message
    assert str(script.requests[0].url).endswith("?api_key=query-secret-123&region=eu")


async def test_a_bearer_token_in_custom_headers_is_redacted_too(
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = "tok-abcdef-0123456789"
    echo = {"error": {"message": f"token {token} expired"}}
    script = Script(json_answer(401, echo))
    with caplog.at_level(logging.DEBUG, logger="kun.model"):
        last = error(
            await collect(
                client(script, api_key=None, headers={"Authorization": f"Bearer {token}"})
            )
        )
    assert token not in last.message
    assert token not in caplog.text


async def test_a_long_error_body_is_cut(caplog: pytest.LogCaptureFixture) -> None:
    body = b"<html>" + b"x" * 5000 + b"</html>"
    script = Script(json_answer(502, body))
    with caplog.at_level(logging.WARNING, logger="kun.model"):
        last = error(await collect(client(script)))
    assert "more characters" in last.message
    assert len(last.message) < 1300
    assert all(len(r.getMessage()) < 1400 for r in caplog.records)


def test_an_error_code_that_only_looks_like_a_status_stays_a_plain_error() -> None:
    """A provider's own code is kept as given; ``http_²`` is no status."""
    from kun.contracts.model import ErrorChunk

    assert error_from_chunk(ErrorChunk(code="http_503", message="m")).status_code == 503
    odd = error_from_chunk(ErrorChunk(code="http_\u00b2", message="m"))
    assert not isinstance(odd, APIStatusError) and odd.code == "http_\u00b2"
