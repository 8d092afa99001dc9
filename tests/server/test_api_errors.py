"""Bad input gets a 4xx JSON error naming the field or the reason, never
a 500: malformed JSON, wrong types, unknown fields, oversize bodies, bad
ids, unknown routes and methods, and requests without the token."""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any

import httpx
import pytest

from kun.model.scripted import text_reply
from kun.server.auth import NeedsToken, check_bind, is_loopback
from kun.server.bodies import MAX_BODY_BYTES
from kun.store.jsonl import JsonlEventStore
from tests.server.support import api

pytestmark = pytest.mark.anyio


def _error(response: httpx.Response, status: int, code: str, field: str | None = None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code and error["message"]
    assert error.get("field") == field


async def test_bodies_that_do_not_decode(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        post = a.client.post
        json = {"content-type": "application/json"}
        _error(await post("/v1/threads", content=b"{nope", headers=json), 400, "malformed_json")
        _error(await post("/v1/threads", content=b"[1]", headers=json), 400, "invalid_body")
        _error(await post("/v1/threads", json={"titel": "x"}), 400, "invalid_body", "titel")
        _error(
            await post("/v1/threads", json={"limits": {"max_steps": "3"}}),
            400,
            "invalid_body",
            "limits.max_steps",
        )
        _error(
            await post("/v1/threads", json={"limits": {"max_steps": 0}}),
            400,
            "invalid_body",
            "limits.max_steps",
        )
        _error(
            await post("/v1/threads", json={"approval_policy": "yolo"}),
            400,
            "invalid_body",
            "approval_policy",
        )
        _error(
            await post("/v1/threads", json={"workspace": str(tmp_path / "missing")}),
            400,
            "invalid_workspace",
            "workspace",
        )
        thread = await a.new_thread()
        turns = f"/v1/threads/{thread}/turns"
        _error(await post(turns, json={"text": "   "}), 422, "blank", "text")
        _error(await post(turns, json={"text": 1}), 400, "invalid_body", "text")
        bad = {"text": "x", "attachments": [{"name": "a", "mime_type": "image/png", "data": "!"}]}
        _error(await post(turns, json=bad), 400, "invalid_body", "attachments[0].data")
        fork = f"/v1/threads/{thread}/fork"
        _error(await post(fork, json={"at_seq": 1, "at_turn": 1}), 400, "invalid_body", "at_turn")
        _error(await post(fork, json={"at_seq": 10**6}), 422, "seq_out_of_range", "at_seq")
        _error(await post(f"/v1/threads/{thread}/rewind", json={"before_turn": "7"}), 404,
               "turn_not_found")  # fmt: skip
        assert not (a.home / "uploads").exists()


async def test_oversize_bodies_are_refused_before_decoding(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        big = b'{"text": "' + b"x" * MAX_BODY_BYTES + b'"}'
        json = {"content-type": "application/json"}
        _error(await a.client.post("/v1/threads", content=big, headers=json), 413, "body_too_large")

        async def chunks() -> Any:
            for _ in range(MAX_BODY_BYTES // (1 << 20) + 1):
                yield b" " * (1 << 20)

        _error(
            await a.client.post("/v1/threads", content=chunks(), headers=json),
            413,
            "body_too_large",
        )


@pytest.mark.parametrize(
    "path",
    ["/v1/threads/.hidden", "/v1/threads/a%00b", "/v1/threads/%2E%2E"],
)
async def test_ids_that_may_not_touch_the_disk(tmp_path: Path, path: str) -> None:
    async with api(tmp_path) as a:
        _error(await a.client.get(path), 400, "invalid_id", "thread_id")


async def test_traversal_and_unknown_routes_and_methods(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        for path in ("/v1/threads/..%2F..%2Fetc", "/v1/threads/..%2F", "/v2/threads", "/nope"):
            response = await a.client.get(path)
            assert response.status_code in (400, 404), (path, response.status_code)
            assert response.json()["error"]["code"] in ("invalid_id", "not_found")
        _error(await a.client.get("/v1/threads/thr_nope"), 404, "thread_not_found")
        _error(await a.client.delete("/v1/threads"), 405, "method_not_allowed")
        _error(await a.client.get("/v1/threads", params={"limit": "0"}), 400, "invalid_query",
               "limit")  # fmt: skip
        _error(await a.client.get("/v1/threads", params={"cursor": "x"}), 400, "invalid_query",
               "cursor")  # fmt: skip
        _error(await a.client.get("/v1/usage"), 400, "invalid_query", "thread")
        _error(await a.client.post("/v1/approvals/a", json={"decision": "maybe"}), 400,
               "invalid_body", "decision")  # fmt: skip


async def test_a_token_is_required_when_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def compare_digest(given: bytes, expected: bytes) -> bool:
        compared.append((given, expected))
        return real(given, expected)

    monkeypatch.setattr("kun.server.auth.hmac.compare_digest", compare_digest)
    async with api(tmp_path, token="s3cret") as a:
        _error(await a.client.get("/v1/threads"), 401, "unauthorized")
        wrong = {"Authorization": "Bearer s3cres"}
        _error(await a.client.get("/v1/threads", headers=wrong), 401, "unauthorized")
        right = {"Authorization": "Bearer s3cret"}
        assert (await a.client.get("/v1/threads", headers=right)).status_code == 200
    assert compared[-1] == (b"Bearer s3cret", b"Bearer s3cret") and len(compared) == 3


def test_only_loopback_may_go_without_a_token() -> None:
    for host in ("127.0.0.1", "::1", "localhost", "127.1.2.3", "[::1]"):
        assert is_loopback(host)
        check_bind(host, None)
    for host in ("0.0.0.0", "::", "192.168.1.5", "example.com"):
        assert not is_loopback(host)
        with pytest.raises(NeedsToken):
            check_bind(host, None)
        check_bind(host, "token")


async def test_error_messages_name_files_under_the_home_not_where_it_is(tmp_path: Path) -> None:
    async with api(tmp_path, [text_reply("one")]) as a:
        thread = await a.new_thread()
        await a.wait(thread, await a.start(thread, "first"))
    log = tmp_path / "home" / "threads" / thread / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    async with JsonlEventStore(a.home) as other:
        await other.claim(thread)
        async with api(tmp_path) as b:
            locked = await b.client.post(f"/v1/threads/{thread}/turns", json={"text": "x"})
    log.write_bytes(b"".join([lines[0], b"{not an event}\n", *lines[1:]]))
    async with api(tmp_path) as c:
        corrupt = await c.client.post(f"/v1/threads/{thread}/turns", json={"text": "x"})
        streamed = await c.client.get(f"/v1/threads/{thread}/events", params={"until": 3})
    said = {"thread_locked": locked, "corrupt_log": corrupt}
    for code, response in said.items():
        assert response.json()["error"]["code"] == code, response.text
        message = response.json()["error"]["message"]
        assert str(tmp_path) not in message, message
        assert f"<home>/threads/{thread}/" in message, message
    assert streamed.text.endswith("resume with Last-Event-ID: 0\n\n"), streamed.text
    assert str(tmp_path) not in streamed.text and "<home>/threads/" in streamed.text
