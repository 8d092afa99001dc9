"""With a token, every route of the app (pages, static files, the event
streams, export and import, the OpenAPI document) answers 401 to a request
without it: none is public by accident, including routes added later."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.routing import Route

from tests.server.support import api

TOKEN = "s3cret-token-value"


@pytest.mark.anyio
async def test_every_route_needs_the_token(tmp_path: Path) -> None:
    async with api(tmp_path, token=TOKEN) as kun:
        routes = [r for r in kun.app.routes if isinstance(r, Route)]
        assert len(routes) > 20
        for route in routes:
            path = re.sub(r"\{[^}]+\}", "x1", route.path)
            for method in sorted(route.methods or ()):
                for headers in ({}, {"Authorization": "Bearer wrong"}, {"Cookie": "kun_token=no"}):
                    response = await kun.client.request(method, path, headers=headers)
                    assert response.status_code == 401, (method, path, headers)
                    assert TOKEN not in response.text
        page = await kun.client.get("/?token=nearly-" + TOKEN)
        assert page.status_code == 401 and "set-cookie" not in page.headers
