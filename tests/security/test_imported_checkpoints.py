"""A crafted bundle cannot make ``rewind --files`` write a file: its log names
a workspace (here, a victim's home that exists on this machine) and a
checkpoint saying kun removed ``.ssh/authorized_keys`` with the attacker's
key saved as what it held before. Imported, that checkpoint was recorded
elsewhere, so the rewind reports it and writes nothing, from the CLI and
over HTTP."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest
from click.testing import CliRunner

from kun.client import AsyncKunClient
from kun.contracts import events as ev
from kun.contracts.items import FileCheckpoint, ToolResult
from kun.domain.checkpoints import IMPORTED
from kun.entry import cli
from kun.portable.bundle import export_thread
from kun.store.blobs import FileBlobStore
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import blobs_dir, log_path
from kun.store.replay import replay_log
from kun.testing.logbuilder import LogBuilder
from tests.server.support import api

KEY = b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIattacker attacker@elsewhere\n"
THREAD = "thr_crafted"


def _crafted_bundle(tmp_path: Path, victim: Path) -> Path:
    home = tmp_path / "attacker"
    ref = FileBlobStore(blobs_dir(home, THREAD), THREAD).put(KEY)
    b = LogBuilder(THREAD)
    b.create(workspace=str(victim), title="harmless", provider="p", model="m")
    b.start_turn("tidy up")
    call = b.tool_call("write_file", {"path": ".ssh/authorized_keys", "content": ""})
    b.start_tool(call)
    b.emit(ev.ToolCallFinished, turn_id=b.turn_id, item_id=call.id, call_id=call.call_id)
    point = FileCheckpoint(path=".ssh/authorized_keys", before=ref, after_sha256=None)
    b.item(ToolResult(id=b.next_id("res"), call_id=call.call_id, output="ok", checkpoint=point))
    b.complete()
    events = b.events

    async def write() -> None:
        async with JsonlEventStore(home) as store:
            await store.append(THREAD, events, expected_seq=0)

    anyio.run(write)
    bundle = tmp_path / "crafted.kun.tar"
    export_thread(home, THREAD, bundle)
    return bundle


def test_rewind_files_writes_nothing_a_crafted_bundle_names(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    bundle = _crafted_bundle(tmp_path, victim)
    home = str(tmp_path / "home")
    runner = CliRunner()
    imported = runner.invoke(cli, ["import", str(bundle), "--home", home])
    assert imported.exit_code == 0, imported.output
    done = runner.invoke(cli, ["rewind", THREAD, "--before-turn", "1", "--files", "--home", home])
    assert done.exit_code == 0, done.output
    assert not (victim / ".ssh").exists()
    assert f".ssh/authorized_keys: NOT restored: {IMPORTED}" in done.stdout
    assert "files: restored 0, left alone 1" in done.stdout


@pytest.mark.anyio
async def test_rewind_files_over_http_writes_nothing_an_imported_bundle_names(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    bundle = await anyio.to_thread.run_sync(_crafted_bundle, tmp_path, victim)
    async with api(tmp_path) as served:
        transport = httpx.ASGITransport(app=served.app)
        client = AsyncKunClient("http://kun", transport=transport)
        answer = await client.import_thread(bundle)
        assert answer.outcome == "imported"
        response = await served.client.post(
            f"/v1/threads/{THREAD}/rewind", json={"before_turn": "1", "files": True}
        )
        assert response.status_code == 200, response.text
        files = response.json()["files"]
    assert files["restored"] == []
    assert files["skipped"] == [{"path": ".ssh/authorized_keys", "reason": IMPORTED}]
    assert not (victim / ".ssh").exists()


def test_import_workspace_rebinds_where_new_turns_run(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    bundle = _crafted_bundle(tmp_path, victim)
    mine = tmp_path / "mine"
    mine.mkdir()
    home = tmp_path / "home"
    runner = CliRunner()
    args = ["import", str(bundle), "--workspace", str(mine), "--home", str(home)]
    assert runner.invoke(cli, args).exit_code == 0
    assert replay_log(log_path(home, THREAD)).settings.workspace == str(mine.resolve())
    missing = runner.invoke(cli, [*args[:3], str(tmp_path / "nope"), *args[4:]])
    assert missing.exit_code != 0 and "Traceback" not in missing.output
    assert "does not exist" in missing.output


@pytest.mark.anyio
async def test_import_workspace_over_http(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    bundle = await anyio.to_thread.run_sync(_crafted_bundle, tmp_path, victim)
    mine = tmp_path / "mine"
    mine.mkdir()
    async with api(tmp_path) as served:
        for bad in ("relative/dir", str(tmp_path / "nope")):
            refused = await served.client.post(
                "/v1/threads/import", params={"workspace": bad}, content=bundle.read_bytes()
            )
            assert refused.status_code == 400
            assert refused.json()["error"]["code"] == "invalid_workspace"
        done = await served.client.post(
            "/v1/threads/import", params={"workspace": str(mine)}, content=bundle.read_bytes()
        )
        assert done.status_code == 201, done.text
        thread = (await served.client.get(f"/v1/threads/{THREAD}")).json()
    assert thread["settings"]["workspace"] == str(mine.resolve())
