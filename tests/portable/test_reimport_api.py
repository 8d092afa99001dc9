"""``POST /v1/threads/import`` of a session imported and continued in kun:
200 already imported (the kun turns counted), 409 ``import_changed``
saying what differs, ``?replace=1`` 201 with the trash entry it made, and a
thread the server is writing is never swapped out under it."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest

from kun.model.scripted import tool_reply
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
    """A turn of the server's waiting at an approval holds the thread: the
    import is refused and the log untouched. An idle thread holds nothing (a
    read never locks), so it is replaced, and the server's next read shows
    the new import, not what it had cached."""
    write = tool_reply("write_file", {"path": "c.py", "content": "x"})
    async with api(tmp_path, [write]) as served:
        thread_id = await _continued(served.home, served.workspace, tmp_path)
        opened = await served.client.get(f"/v1/threads/{thread_id}")
        assert opened.status_code == 200
        patched = await served.client.patch(
            f"/v1/threads/{thread_id}", json={"approval_policy": "auto"}
        )
        assert patched.status_code == 200, patched.text
        turn_id = await served.start(thread_id, "write c.py")
        for _ in range(1000):  # the turn reaches its approval
            shown = (await served.client.get(f"/v1/threads/{thread_id}")).json()
            if shown["pending_approvals"]:
                break
            await anyio.sleep(0.01)
        else:
            raise AssertionError("the turn never asked for its approval")
        log = await anyio.Path(log_path(served.home, thread_id)).read_bytes()
        grown = _body([*claude_lines(), claude_lines()[-1]])
        refused = await served.client.post(URL + "&replace=1", content=grown)
        assert (refused.status_code, refused.json()["error"]["code"]) == (409, "thread_locked")
        assert await anyio.Path(log_path(served.home, thread_id)).read_bytes() == log
        interrupted = await served.client.post(
            f"/v1/threads/{thread_id}/turns/{turn_id}/interrupt", json={}
        )
        assert interrupted.status_code in (200, 202), interrupted.text
        assert (await served.wait(thread_id, turn_id))["status"] == "aborted"

        kun_turns = len(opened.json()["turns"]) + 1
        replaced = await served.client.post(URL + "&replace=1", content=grown)
        assert replaced.status_code == 201, replaced.text
        now = (await served.client.get(f"/v1/threads/{thread_id}")).json()
        assert len(now["turns"]) == kun_turns - 4  # the 3 kun turns and the aborted one
        assert now["pending_approvals"] == []
