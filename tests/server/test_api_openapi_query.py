"""``/openapi.json`` describes the query parameters the routes read (the
thread list's ``q`` among them) and the export and import routes, whose
answer and body are files; the described parameters are the ones the
server honours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kun.server import portable, stream
from tests.server.support import api

pytestmark = pytest.mark.anyio


def _query(doc: dict[str, Any], method: str, path: str) -> dict[str, dict[str, Any]]:
    operation = doc["paths"][path][method]
    return {p["name"]: p for p in operation.get("parameters", ()) if p["in"] == "query"}


async def test_the_thread_list_describes_q_and_honours_it(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        doc = (await a.client.get("/openapi.json")).json()
        listed = _query(doc, "get", "/v1/threads")
        assert set(listed) == {"limit", "cursor", "all", "q"}
        q = listed["q"]
        assert q["schema"] == {"type": "string"} and not q["required"]
        assert "ignoring case" in q["description"]
        assert all(w in q["description"] for w in ("title", "workspace", "id"))
        wanted = await a.new_thread(title="Slow VAT report")
        await a.new_thread(title="Something else")
        found = (await a.client.get("/v1/threads", params={"q": "vat REP"})).json()
    assert [t["thread_id"] for t in found["threads"]] == [wanted]


async def test_export_and_import_are_described_as_files(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        doc = (await a.client.get("/openapi.json")).json()
    export = doc["paths"]["/v1/threads/{thread_id}/export"]["get"]
    assert set(_query(doc, "get", "/v1/threads/{thread_id}/export")) == {"compress"}
    assert set(export["responses"]["200"]["content"]) == {"application/gzip", "application/x-tar"}
    imported = doc["paths"]["/v1/threads/import"]["post"]
    params = _query(doc, "post", "/v1/threads/import")
    assert set(params) == {"from", "as", "replace", "workspace", "name"}
    assert set(params["from"]["schema"]["enum"]) == set(portable._SOURCES)
    body = imported["requestBody"]["content"]["application/octet-stream"]["schema"]
    assert body == {"type": "string", "format": "binary"}


async def test_the_event_stream_describes_what_it_accepts(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        doc = (await a.client.get("/openapi.json")).json()
    described = _query(doc, "get", "/v1/threads/{thread_id}/events")
    assert set(described) == stream._THREAD_PARAMS
