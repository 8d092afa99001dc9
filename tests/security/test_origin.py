"""A browser page from another site cannot drive kun: DNS rebinding is
refused by the ``Host`` check of a server without a token, and a
cross-origin request that changes state by the ``Origin`` check (with or
without a token)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.support import api

TOKEN = "s3cret-token-value"


@pytest.mark.anyio
@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example"])
async def test_a_rebound_host_is_refused_without_a_token(tmp_path: Path, host: str) -> None:
    async with api(tmp_path) as kun:
        for method, path in [("GET", "/v1/threads"), ("GET", "/"), ("GET", "/openapi.json")]:
            response = await kun.client.request(method, path, headers={"Host": host})
            assert response.status_code == 421, (path, response.text)
            assert response.json()["error"]["code"] == "bad_host"
        response = await kun.client.post(
            "/v1/threads", json={"workspace": str(kun.workspace)}, headers={"Host": host}
        )
        assert response.status_code == 421
        assert not (kun.home / "threads").exists() or not any((kun.home / "threads").iterdir())


@pytest.mark.anyio
@pytest.mark.parametrize(
    "host", ["127.0.0.1:8000", "localhost:8000", "LOCALHOST", "[::1]:8000", "127.1.2.3", "kun"]
)
async def test_loopback_names_are_served_without_a_token(tmp_path: Path, host: str) -> None:
    async with api(tmp_path) as kun:
        response = await kun.client.get("/v1/threads", headers={"Host": host})
        assert response.status_code == 200, response.text


@pytest.mark.anyio
async def test_a_token_server_answers_any_host(tmp_path: Path) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with api(tmp_path, token=TOKEN, headers=headers) as kun:
        response = await kun.client.get("/v1/threads", headers={"Host": "kun.example.com"})
        assert response.status_code == 200, response.text


@pytest.mark.anyio
@pytest.mark.parametrize("origin", ["https://evil.example", "http://localhost:3000", "null"])
async def test_a_cross_origin_post_is_refused(tmp_path: Path, origin: str) -> None:
    async with api(tmp_path) as kun:
        response = await kun.client.post(
            "/v1/threads",
            content=f'{{"workspace": "{kun.workspace}"}}',
            headers={"Origin": origin, "Content-Type": "text/plain", "Host": "localhost:8000"},
        )
        assert response.status_code == 403, response.text
        assert response.json()["error"]["code"] == "cross_origin"
        listed = await kun.client.get("/v1/threads")
        assert listed.json()["threads"] == []


@pytest.mark.anyio
async def test_a_cookie_cannot_carry_a_cross_origin_post(tmp_path: Path) -> None:
    """``localhost:3000`` is same-site with ``localhost:8000``: the
    ``SameSite=Strict`` cookie goes along, the Origin check stops it."""
    async with api(tmp_path, token=TOKEN) as kun:
        kun.client.cookies.set("kun_token", TOKEN)
        response = await kun.client.post(
            "/v1/threads",
            json={"workspace": str(kun.workspace)},
            headers={"Origin": "http://localhost:3000", "Host": "localhost:8000"},
        )
        assert response.status_code == 403, response.text
        same = await kun.client.post(
            "/v1/threads",
            json={"workspace": str(kun.workspace)},
            headers={"Origin": "http://localhost:8000", "Host": "localhost:8000"},
        )
        assert same.status_code == 201, same.text


@pytest.mark.anyio
async def test_same_origin_pages_and_proxies_still_work(tmp_path: Path) -> None:
    async with api(tmp_path) as kun:
        response = await kun.client.post(
            "/v1/threads",
            json={"workspace": str(kun.workspace)},
            headers={"Origin": "http://127.0.0.1:8000", "Host": "127.0.0.1:8000"},
        )
        assert response.status_code == 201, response.text
    (tmp_path / "b").mkdir()
    async with api(tmp_path / "b", token=TOKEN) as kun:
        kun.client.cookies.set("kun_token", TOKEN)
        response = await kun.client.post(
            "/v1/threads",
            json={"workspace": str(kun.workspace)},
            headers={
                "Origin": "https://kun.example.com",
                "Host": "127.0.0.1:8000",
                "X-Forwarded-Host": "kun.example.com",
            },
        )
        assert response.status_code == 201, response.text
