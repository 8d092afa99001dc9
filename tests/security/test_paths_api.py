"""No thread, turn, approval or request id given to the API reaches a file
outside the home: every malformed or traversing id is a 4xx, never a 200
or a 500."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.support import api

EVIL = [  # literal ".." segments are resolved by the client before sending
    "..%2F..%2Fetc",
    "%2E%2E",
    "%2e%2e",
    "a%00b",
    "..%5c..%5cwindows",
    "%2Fetc%2Fpasswd",
    "x" * 300,
]


@pytest.mark.anyio
async def test_traversing_ids_are_refused_on_every_route(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("TOP-SECRET\n")
    async with api(tmp_path) as kun:
        thread = await kun.new_thread()
        gets = [
            "/v1/threads/{x}",
            "/v1/threads/{x}/events",
            "/v1/threads/{x}/log",
            "/v1/threads/{x}/transcript",
            "/v1/threads/{x}/usage",
            "/v1/threads/{x}/export",
            "/threads/{x}",
            "/static/{x}",
            f"/v1/threads/{thread}/turns/{{x}}",
        ]
        posts = [
            "/v1/threads/{x}/turns",
            "/v1/threads/{x}/fork",
            "/v1/threads/{x}/rewind",
            "/v1/threads/{x}/compact",
            f"/v1/threads/{thread}/turns/{{x}}/steer",
            f"/v1/threads/{thread}/turns/{{x}}/interrupt",
            "/v1/approvals/{x}",
            "/v1/user-inputs/{x}",
        ]
        for evil in EVIL:
            for route in gets:
                response = await kun.client.get(route.format(x=evil))
                assert 400 <= response.status_code < 500, (route, evil, response.status_code)
                assert b"TOP-SECRET" not in response.content
            for route in posts:
                response = await kun.client.post(route.format(x=evil), json={"text": "hi"})
                assert 400 <= response.status_code < 500, (route, evil, response.status_code)
