"""``kun serve`` and file descriptors: a thread it only reads, or wrote and
is done with, holds none (its writer is closed when the write ends), so a
server under a low open-file limit keeps creating and reading threads far
past it; and at start the server raises its soft limit to the hard one."""

from __future__ import annotations

import os
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import httpx
import pytest
from anyio.abc import Process

from kun.testing.fake_provider import FakeProvider
from tests.server.test_serve import _serve, _workspace

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LIMIT = 256
_LIMITED = (
    "import resource, runpy, sys; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2]))); "
    "sys.argv = ['kun', *sys.argv[3:]]; runpy.run_module('kun', run_name='__main__')"
)


def _limited_serve(
    tmp_path: Path, base_url: str, soft: int, hard: int
) -> AbstractAsyncContextManager[tuple[Process, httpx.AsyncClient]]:
    """``kun serve`` started with the open-file limit ``soft``/``hard``."""
    return _serve(tmp_path, base_url, kun=(sys.executable, "-c", _LIMITED, str(soft), str(hard)))


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _soft_limit(pid: int) -> int:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no open-file limit")


async def test_threads_past_the_fd_limit_are_created_and_read(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    async with FakeProvider([], format="chat_completions") as provider:
        async with _limited_serve(tmp_path, provider.base_url, LIMIT, LIMIT) as (process, client):
            assert _soft_limit(process.pid) == LIMIT
            before = _open_fds(process.pid)
            threads = []
            for _ in range(LIMIT + 64):
                created = await client.post("/v1/threads", json={"workspace": workspace})
                assert created.status_code == 201, created.text
                thread = created.json()["thread_id"]
                threads.append(thread)
                shown = await client.get(f"/v1/threads/{thread}")
                assert shown.status_code == 200, shown.text
            renamed = await client.patch(f"/v1/threads/{threads[0]}", json={"title": "first"})
            assert renamed.status_code == 200, renamed.text
            for thread in threads[-8:]:
                assert (await client.get(f"/v1/threads/{thread}/usage")).status_code == 200
            listed = await client.get("/v1/threads", params={"limit": 500})
            assert listed.status_code == 200 and len(listed.json()["threads"]) == len(threads)
            assert _open_fds(process.pid) <= before + 8


async def test_serve_raises_its_soft_fd_limit_to_the_hard_one(tmp_path: Path) -> None:
    async with FakeProvider([], format="chat_completions") as provider:
        async with _limited_serve(tmp_path, provider.base_url, LIMIT, 4 * LIMIT) as (process, _):
            assert _soft_limit(process.pid) == 4 * LIMIT
