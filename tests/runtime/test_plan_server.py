"""The HTTP API starts a plan-mode turn with ``plan_mode`` in the body."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.model.scripted import text_reply
from tests.server.support import api

pytestmark = pytest.mark.anyio


async def test_a_plan_mode_turn_over_http(tmp_path: Path) -> None:
    prose = "1. Add the flag\n2. Write a test"
    async with api(tmp_path, [text_reply(prose)]) as a:
        thread = await a.new_thread()
        turn = await a.wait(thread, await a.start(thread, "plan a flag", plan_mode=True))
        assert turn["status"] == "completed" and turn["plan_mode"] is True
        plans = [i for i in turn["items"] if i["type"] == "plan"]
        assert [p["markdown"] for p in plans] == [prose]
        tools = {t.name for t in a.model.requests[0].tools}
        assert "create_plan" in tools and "write_file" not in tools
