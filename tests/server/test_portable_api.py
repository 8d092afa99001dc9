"""Export and import over HTTP (``GET /v1/threads/{id}/export``, ``POST
/v1/threads/import``), in process: a thread exported by one server and
imported by another has the same log, side files and projection; a bundle
altered on the way is refused naming the member, and nothing is left in
the home; an id already taken is 409 until ``as`` names another; the token
guards both; a body past the limit is 413."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from kun.app.answers import Exported, ImportDone
from kun.client import AsyncKunClient, Conflict
from kun.portable.sessions import import_session, session_thread_id
from kun.server import portable
from kun.store.paths import blobs_dir, log_path
from tests.portable.conftest import BIG, stored_thread
from tests.portable.marks import unmarked
from tests.portable.test_sessions import claude_lines, codex_lines
from tests.server.support import api

pytestmark = pytest.mark.anyio


def _client(served: object) -> AsyncKunClient:
    transport = httpx.ASGITransport(app=served.app, raise_app_exceptions=False)  # type: ignore[attr-defined]
    return AsyncKunClient("http://kun", transport=transport)


def _members(bundle: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(bundle)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def _tar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _scratch_left(home: Path) -> list[str]:
    return [p.name for p in home.iterdir() if p.name.startswith((".serve-", ".import-"))]


async def test_a_round_trip_between_two_servers_changes_nothing(tmp_path: Path) -> None:
    await anyio.to_thread.run_sync(stored_thread, tmp_path / "a" / "home")
    (tmp_path / "b").mkdir()
    bundle = tmp_path / "t.kun.tar.gz"
    async with api(tmp_path / "a") as one, _client(one) as client:
        facts = await client.export_thread("thr_source", bundle)
        projection = (await one.client.get("/v1/threads/thr_source")).json()
        assert _scratch_left(one.home) == []
    assert facts == Exported(thread_id="thr_source", events=facts.events, side_files=1)
    async with api(tmp_path / "b") as two, _client(two) as client:
        answer = await client.import_thread(bundle)
        assert answer == ImportDone(
            thread_id="thr_source",
            outcome="imported",
            events=facts.events,
            detail="",
            trashed=None,
        )
        got = (await two.client.get("/v1/threads/thr_source")).json()
        assert got.pop("imported_through") == got["last_seq"] == projection["last_seq"] + 1
        assert got.pop("imported") == {"source": "bundle", "workspace": None}
        moved = ("last_seq", "updated_at")
        assert {k: v for k, v in got.items() if k not in moved} == {
            k: v for k, v in projection.items() if k not in moved
        }
        listed = (await two.client.get("/v1/threads")).json()
        assert [t["thread_id"] for t in listed["threads"]] == ["thr_source"]
        again = await client.import_thread(bundle)
        assert again.outcome == "already_imported"
        assert _scratch_left(two.home) == []
    source, copy = tmp_path / "a" / "home", tmp_path / "b" / "home"
    assert unmarked(log_path(copy, "thr_source")) == log_path(source, "thr_source").read_bytes()
    assert [p.read_bytes() for p in blobs_dir(copy, "thr_source").iterdir()] == [BIG]


async def test_a_plain_tar_on_request_and_an_unknown_thread_is_404(tmp_path: Path) -> None:
    await anyio.to_thread.run_sync(stored_thread, tmp_path / "home")
    async with api(tmp_path) as served:
        plain = await served.client.get("/v1/threads/thr_source/export?compress=false")
        assert plain.status_code == 200 and plain.headers["content-type"] == "application/x-tar"
        assert 'filename="thr_source.kun.tar"' in plain.headers["content-disposition"]
        assert {"manifest.json", "events.jsonl"} <= set(_members(plain.content))
        missing = await served.client.get("/v1/threads/thr_nope/export")
        assert missing.status_code == 404, missing.text


@pytest.mark.parametrize("victim", ["events.jsonl", "blobs/"])
async def test_a_tampered_bundle_is_refused_naming_the_member(tmp_path: Path, victim: str) -> None:
    await anyio.to_thread.run_sync(stored_thread, tmp_path / "a" / "home")
    (tmp_path / "b").mkdir()
    async with api(tmp_path / "a") as one:
        members = _members((await one.client.get("/v1/threads/thr_source/export")).content)
    name = next(n for n in members if n.startswith(victim))
    data = bytearray(members[name])
    data[5] ^= 1
    members[name] = bytes(data)
    async with api(tmp_path / "b") as two:
        refused = await two.client.post("/v1/threads/import", content=_tar(members))
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["code"] == "bundle_refused"
        assert error["message"] == f"{name}: SHA-256 differs from the manifest (altered)"
        assert not (two.home / "threads").exists() or not any((two.home / "threads").iterdir())
        assert _scratch_left(two.home) == []


async def test_a_taken_id_is_409_until_as_names_another(tmp_path: Path) -> None:
    await anyio.to_thread.run_sync(stored_thread, tmp_path / "home")
    async with api(tmp_path) as served, _client(served) as client:
        bundle = tmp_path / "t.kun.tar.gz"
        await client.export_thread("thr_source", bundle)
        log = log_path(served.home, "thr_source")
        log.write_bytes(log.read_bytes()[:-1])
        with pytest.raises(Conflict) as refused:
            await client.import_thread(bundle)
        assert (refused.value.status, refused.value.code) == (409, "thread_exists")
        assert "--as" in refused.value.message
        copy = await client.import_thread(bundle, as_id="thr_copy")
        assert copy.thread_id == "thr_copy"
        assert (await served.client.get("/v1/threads/thr_copy")).status_code == 200


async def test_the_token_guards_both_routes(tmp_path: Path) -> None:
    await anyio.to_thread.run_sync(stored_thread, tmp_path / "home")
    async with api(tmp_path, token="sesame") as served:
        assert (await served.client.get("/v1/threads/thr_source/export")).status_code == 401
        assert (await served.client.post("/v1/threads/import", content=b"x")).status_code == 401
        ok = await served.client.get(
            "/v1/threads/thr_source/export", headers={"Authorization": "Bearer sesame"}
        )
        assert ok.status_code == 200


async def test_a_body_past_the_limit_is_413_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(portable, "MAX_IMPORT_BYTES", 1000)
    async with api(tmp_path) as served:
        declared = await served.client.post("/v1/threads/import", content=b"x" * 2000)
        assert declared.status_code == 413, declared.text

        def chunks() -> object:
            yield from (b"x" * 600, b"x" * 600)

        streamed = await served.client.post("/v1/threads/import", content=_agen(chunks))
        assert streamed.status_code == 413, streamed.text
        assert _scratch_left(served.home) == []


async def _agen(chunks: object):  # type: ignore[no-untyped-def]
    for chunk in chunks():  # type: ignore[operator]
        yield chunk


async def test_bad_query_values_are_400(tmp_path: Path) -> None:
    async with api(tmp_path) as served:
        wrong = await served.client.post("/v1/threads/import?from=nope", content=b"x")
        assert (wrong.status_code, wrong.json()["error"]["field"]) == (400, "from")
        both = await served.client.post("/v1/threads/import?replace=1&as=thr_x", content=b"x")
        assert (both.status_code, both.json()["error"]["field"]) == (400, "replace")
        odd = await served.client.post("/v1/threads/import?replace=maybe", content=b"x")
        assert (odd.status_code, odd.json()["error"]["field"]) == (400, "replace")
        junk = await served.client.post("/v1/threads/import", content=b"junk")
        assert junk.json()["error"]["message"] == "not a kun bundle (not a tar archive)"


@pytest.mark.parametrize(
    ("source", "lines"), [("codex", codex_lines), ("claude-code", claude_lines)]
)
async def test_a_session_imports_as_it_does_locally(
    tmp_path: Path, source: str, lines: Callable[[], list[dict[str, Any]]]
) -> None:
    """The same thread id and log bytes as a local import; a Claude Code
    file without a session id is named after the file the client sent."""
    written = lines()
    if source == "claude-code":
        written = [{k: v for k, v in line.items() if k != "sessionId"} for line in written]
    upload = tmp_path / "upload" / "f0e1d2c3-session.jsonl"
    upload.parent.mkdir()
    upload.write_bytes(b"".join(msgspec.json.encode(line) + b"\n" for line in written))
    local = tmp_path / "local"
    here = await anyio.to_thread.run_sync(
        partial(import_session, local, upload, source, replace_changed=False)
    )
    async with api(tmp_path) as served, _client(served) as client:
        answer = await client.import_thread(upload, source=source)
    assert (answer.thread_id, answer.outcome) == (here.thread_id, "imported")
    if source == "claude-code":
        assert here.thread_id == session_thread_id(source, "f0e1d2c3-session")
    copy = unmarked(log_path(tmp_path / "home", here.thread_id))
    assert copy == unmarked(log_path(local, here.thread_id))
