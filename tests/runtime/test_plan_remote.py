"""``kun --server URL run --plan``: the plan-mode turn runs on the server."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.contracts.items import Plan
from kun.contracts.model import CompletedChunk, TextDeltaChunk
from kun.domain.reduce import replay
from kun.testing.fake_provider import FakeResponse
from tests.test_cli_remote import serving

pytestmark = pytest.mark.anyio

PROSE = "1. Add the flag\n2. Write a test"


async def test_run_plan_over_a_server(tmp_path: Path) -> None:
    answer = FakeResponse(chunks=(TextDeltaChunk(text=PROSE), CompletedChunk(stop_reason="stop")))
    async with serving(tmp_path, [answer]) as s:
        ran = await s.kun("run", "plan a flag", "--plan")
        assert ran.returncode == 0, ran.stderr.decode()
        thread = ran.stderr.decode().strip().splitlines()[-1].split()[1]
        turn = replay(s.events(thread)).turns[0]
        assert turn.plan_mode and turn.status == "completed"
        assert [i.markdown for i in turn.items if isinstance(i, Plan)] == [PROSE]
        tools = {t["function"]["name"] for t in s.provider.requests[0].json["tools"]}
        assert "create_plan" in tools and "bash" not in tools
