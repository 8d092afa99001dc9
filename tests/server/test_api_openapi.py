"""``/openapi.json`` documents every route the app serves, with the
schemas of the Structs that decode the bodies."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from starlette.routing import Route

from kun.server.bodies import StartTurn
from kun.server.openapi import OPERATIONS
from kun.server.web import web_routes
from tests.server.support import api

pytestmark = pytest.mark.anyio

WEB_PAGES = frozenset(r.path for r in web_routes() if isinstance(r, Route))  # pages, not API


async def test_every_route_is_documented_with_its_body_schema(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        served = {
            (method, re.sub(r"\{(\w+):\w+\}", r"{\1}", route.path))
            for route in a.app.routes
            if isinstance(route, Route) and route.path not in WEB_PAGES
            for method in route.methods or ()
            if method != "HEAD"
        }
        documented = {(method, path) for method, path, *_ in OPERATIONS}
        assert served == documented
        doc = (await a.client.get("/openapi.json")).json()
    schemas = doc["components"]["schemas"]
    (_, components) = msgspec.json.schema_components(
        [StartTurn], ref_template="#/components/schemas/{name}"
    )
    assert schemas["StartTurn"] == msgspec.json.decode(msgspec.json.encode(components["StartTurn"]))
    body = doc["paths"]["/v1/threads/{thread_id}/turns"]["post"]["requestBody"]
    assert body["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/StartTurn"
    }
    assert schemas["Upload"]["properties"]["data"]["contentEncoding"] == "base64"
