"""Export, import and the request bodies that carry more than one field,
through ``httpx.MockTransport``: an export appears only once whole, an
existing file is not overwritten unless asked, an import streams with its
Content-Length."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from kun.app.answers import Exported
from kun.client import AsyncKunClient, KunClient
from kun.contracts.threads import AllowRule
from kun.errors import UserMistake
from tests.client.wire import Cut

BUNDLE = b"\x1f\x8b" + b"bundle bytes " * 1000
HEADERS = {"x-kun-thread": "thr_a", "x-kun-events": "12", "x-kun-side-files": "2"}


def test_an_export_streams_to_a_part_file_renamed_once_whole(tmp_path: Path) -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, headers=HEADERS, stream=Cut(BUNDLE[:5000], BUNDLE[5000:],
                                                               cut=False))  # fmt: skip

    out = tmp_path / "t.kun.tar"
    with KunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        facts = kun.export_thread("thr_a", out)
    assert facts == Exported(thread_id="thr_a", events=12, side_files=2)
    assert out.read_bytes() == BUNDLE
    assert [p.name for p in tmp_path.iterdir()] == ["t.kun.tar"]
    assert seen[0].url.params["compress"] == "false"  # the name says a plain tar


def test_a_cut_export_leaves_nothing_behind(tmp_path: Path) -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=HEADERS, stream=Cut(BUNDLE[:5000]))

    with KunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        with pytest.raises(UserMistake, match="lost the server at http://kun"):
            kun.export_thread("thr_a", tmp_path / "t.kun.tar.gz")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.anyio
async def test_an_existing_file_is_kept_unless_forced(tmp_path: Path) -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=HEADERS, content=BUNDLE)

    out = tmp_path / "t.kun.tar.gz"
    out.write_bytes(b"mine")
    async with AsyncKunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        with pytest.raises(UserMistake) as kept:
            await kun.export_thread("thr_a", out)
        assert str(kept.value) == f"bundle {out}: file exists (give --force to overwrite it)"
        assert out.read_bytes() == b"mine"
        await kun.export_thread("thr_a", out, force=True)
    assert out.read_bytes() == BUNDLE


@pytest.mark.anyio
async def test_an_import_streams_with_its_length(tmp_path: Path) -> None:
    seen: list[tuple[httpx.Request, bytes]] = []

    async def handle(request: httpx.Request) -> httpx.Response:
        seen.append((request, await request.aread()))
        done = {"thread_id": "thr_c", "outcome": "imported", "events": 3, "detail": "",
                "trashed": None}  # fmt: skip
        return httpx.Response(201, json=done)

    bundle = tmp_path / "t.kun.tar.gz"
    bundle.write_bytes(BUNDLE)
    async with AsyncKunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        done = await kun.import_thread(bundle, as_id="thr_c", workspace=Path("/srv/w"))
    assert (done.thread_id, done.outcome) == ("thr_c", "imported")
    ((request, body),) = seen
    assert body == BUNDLE and request.headers["content-length"] == str(len(BUNDLE))
    assert dict(request.url.params) == {
        "name": "t.kun.tar.gz",
        "from": "kun",
        "as": "thr_c",
        "workspace": "/srv/w",
    }


def test_always_and_a_dropped_goal_are_sent_as_the_api_says() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("/goal"):
            return httpx.Response(200, json={"thread_id": "thr_a", "goal": None})
        return httpx.Response(200, json={"approval_id": "apr_1", "decision": "approved"})

    with KunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        kun.answer_approval("apr_1", "approved", always=AllowRule(tool="bash", prefix=("ls",)))
        assert kun.change_goal("thr_a", clear=True).goal is None
    approval, goal = seen
    assert approval.content == (
        b'{"decision":"approved","reason":null,"always":{"tool":"bash","prefix":["ls"]}}'
    )
    assert (goal.method, goal.url.path) == ("DELETE", "/v1/threads/thr_a/goal")


def test_a_thread_name_is_one_path_segment() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(404, json={"error": {"code": "x", "message": "x"}})

    with KunClient("http://kun", transport=httpx.MockTransport(handle)) as kun:
        with pytest.raises(UserMistake):
            kun.log("../../v1/reconcile")
    assert seen[0].url.raw_path == b"/v1/threads/..%2F..%2Fv1%2Freconcile/log"
