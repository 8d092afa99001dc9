"""``POST /v1/threads/{id}/rewind`` with ``files: true`` and its undo put the
workspace's files back and report what they did (issue 13, item 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.model.scripted import text_reply, tool_reply
from tests.server.support import api

pytestmark = pytest.mark.anyio

SCRIPT = [
    tool_reply("edit_file", {"path": "a.py", "old_string": "'a'", "new_string": "'A'"}),
    tool_reply("write_file", {"path": "b.txt", "content": "b\n"}, call_id="c2"),
    text_reply("done"),
]


async def test_rewind_with_files_over_http_then_undo(tmp_path: Path) -> None:
    async with api(tmp_path, SCRIPT) as a:
        thread = await a.new_thread(approval_policy="full-auto")
        turn = await a.wait(thread, await a.start(thread, "change things"))
        assert turn["status"] == "completed"
        ws = a.workspace
        assert (ws / "a.py").read_text() == "print('A')\n"

        response = await a.client.post(
            f"/v1/threads/{thread}/rewind", json={"before_turn": "1", "files": True}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert sorted(p["path"] for p in body["files"]["restored"]) == ["a.py", "b.txt"]
        assert "bash" in body["files_note"]
        assert (ws / "a.py").read_text() == "print('a')\n" and not (ws / "b.txt").exists()

        response = await a.client.post(f"/v1/threads/{thread}/rewind/undo")
        assert response.status_code == 200, response.text
        assert len(response.json()["files"]["restored"]) == 2
        assert (ws / "a.py").read_text() == "print('A')\n" and (ws / "b.txt").exists()


async def test_rewind_without_files_reports_no_files(tmp_path: Path) -> None:
    async with api(tmp_path, SCRIPT) as a:
        thread = await a.new_thread(approval_policy="full-auto")
        await a.wait(thread, await a.start(thread, "change things"))
        response = await a.client.post(f"/v1/threads/{thread}/rewind", json={"before_turn": "1"})
        assert response.status_code == 200, response.text
        assert "files" not in response.json()
        assert (a.workspace / "b.txt").exists()
