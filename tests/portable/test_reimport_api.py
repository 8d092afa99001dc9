"""``POST /v1/threads/import`` of a session imported and continued in kun:
200 already imported (the kun turns counted), 409 ``import_changed``
saying what differs, ``?replace=1`` 201 with the trash entry it made, and a
thread the server is writing is never swapped out under it."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from kun.portable.sessions import import_session
from kun.store.paths import log_path
from tests.portable.kun_turns import continue_in_kun
from tests.portable.test_sessions import claude_lines
from tests.server.support import api

pytestmark = pytest.mark.anyio

URL = "/v1/threads/import?from=claude-code"


def _body(lines: list[dict[str, object]]) -> bytes:
    return b"".join(msgspec.json.encode(line) + b"\n" for line in lines)


async def _continued(home: Path, workspace: Path, tmp_path: Path) -> str:
    path = tmp_path / "s.jsonl"
    await anyio.Path(path).write_bytes(_body(claude_lines()))
    result = await anyio.to_thread.run_sync(
        lambda: import_session(
            home, path, "claude-code", replace_changed=False, workspace=workspace
        )
    )
    await anyio.to_thread.run_sync(continue_in_kun, home, result.thread_id, 3)
    return result.thread_id


async def test_already_changed_then_replaced(tmp_path: Path) -> None:
    async with api(tmp_path) as served:
        thread_id = await _continued(served.home, served.workspace, tmp_path)
        log = await anyio.Path(log_path(served.home, thread_id)).read_bytes()
        same = await served.client.post(URL, content=_body(claude_lines()))
        assert same.status_code == 200, same.text
        assert same.json() == {
            "thread_id": thread_id,
            "outcome": "already_imported",
            "events": same.json()["events"],
            "detail": "the thread has 3 turns run in kun since",
            "trashed": None,
        }
        grown = _body([*claude_lines(), claude_lines()[-1]])
        changed = await served.client.post(URL, content=grown)
        assert changed.status_code == 409, changed.text
        error = changed.json()["error"]
        assert (error["code"], error["field"]) == ("import_changed", "replace")
        assert "the session has 1 new record since it was imported at" in error["message"]
        assert "the kun thread has 3 turns run in kun since" in error["message"]
        assert "?replace=1" in error["message"]
        assert await anyio.Path(log_path(served.home, thread_id)).read_bytes() == log

        replaced = await served.client.post(URL + "&replace=1", content=grown)
        assert replaced.status_code == 201, replaced.text
        answer = replaced.json()
        assert answer["outcome"] == "replaced"
        assert answer["trashed"].startswith(f"trash/{thread_id}-")
        assert str(served.home) not in replaced.text
        kept = served.home / answer["trashed"] / "events.jsonl"
        assert await anyio.Path(kept).read_bytes() == log


async def test_a_thread_the_server_is_writing_is_not_swapped_out(tmp_path: Path) -> None:
    async with api(tmp_path) as served:
        thread_id = await _continued(served.home, served.workspace, tmp_path)
        log = await anyio.Path(log_path(served.home, thread_id)).read_bytes()
        opened = await served.client.get(f"/v1/threads/{thread_id}")
        assert opened.status_code == 200
        grown = _body([*claude_lines(), claude_lines()[-1]])
        refused = await served.client.post(URL + "&replace=1", content=grown)
        assert (refused.status_code, refused.json()["error"]["code"]) == (409, "thread_locked")
        assert await anyio.Path(log_path(served.home, thread_id)).read_bytes() == log
        still = await served.client.get(f"/v1/threads/{thread_id}")
        assert len(still.json()["turns"]) == len(opened.json()["turns"])
