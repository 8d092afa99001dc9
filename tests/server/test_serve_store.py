"""``kun serve --store URL``: the whole API on a PostgreSQL database, as a
user runs it (a real process on 127.0.0.1, the fake provider): a thread
created through it, a turn run on it, the list, the projection and the log
read back from the database, nothing written under the home's threads; a
database it cannot reach is one line before anything starts."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import msgspec
import pytest

from kun.domain.reduce import replay
from kun.store.postgres import PostgresEventStore
from kun.testing.fake_provider import FakeProvider
from tests.server.test_serve import ANSWER, _environ, _serve, _wait_settled, _workspace

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_thread_created_and_run_through_serve_lives_in_the_database(
    tmp_path: Path, postgres_url: str
) -> None:
    async with (
        FakeProvider([ANSWER], format="chat_completions") as provider,
        _serve(tmp_path, provider.base_url, "--store", postgres_url) as (_, client),
    ):
        created = await client.post("/v1/threads", json={"workspace": _workspace(tmp_path)})
        assert created.status_code == 201, created.text
        thread = created.json()["thread_id"]
        started = await client.post(f"/v1/threads/{thread}/turns", json={"text": "a.py?"})
        assert started.status_code == 202, started.text
        turn = await _wait_settled(client, thread, started.json()["turn_id"])
        assert turn["status"] == "completed"
        assert turn["items"][-1]["text"] == "a.py prints a."
        listed = (await client.get("/v1/threads")).json()
        projection = (await client.get(f"/v1/threads/{thread}")).json()
        log = (await client.get(f"/v1/threads/{thread}/log")).content
        usage = (await client.get(f"/v1/threads/{thread}/usage")).json()
        trashed = await client.delete(f"/v1/threads/{thread}")

    assert [t["thread_id"] for t in listed["threads"]] == [thread]
    async with PostgresEventStore(postgres_url) as store:
        state = replay(store.read(thread))
        lines = b"".join(store.lines(thread))
    assert projection == msgspec.json.decode(msgspec.json.encode(state))
    assert log == lines and log.count(b"\n") == state.last_seq
    assert usage["threads"][0]["usage"] == msgspec.to_builtins(state.usage)
    assert trashed.status_code == 400 and "works on a kun home" in trashed.text
    assert not (tmp_path / "home" / "threads").exists()


async def test_a_database_out_of_reach_is_one_line(tmp_path: Path) -> None:
    refused = await anyio.run_process(
        [sys.executable, "-m", "kun", "serve", "--port", "0", "--home", str(tmp_path),
         "--store", "postgresql://kun:hunter2@127.0.0.1:1/nowhere"],
        env=_environ(), check=False,
    )  # fmt: skip
    said = refused.stderr.decode()
    assert refused.returncode == 1
    assert said.count("\n") == 1 and said.startswith("kun: error: postgresql://kun@127.0.0.1:1/")
    assert "hunter2" not in said + refused.stdout.decode()


async def test_kun_run_on_the_store_the_home_file_names(tmp_path: Path, postgres_url: str) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    workspace.mkdir()
    async with FakeProvider([ANSWER], format="chat_completions") as provider:
        (home / "kun.toml").write_text(
            f'default_provider = "fake"\n[providers.fake]\nbase_url = "{provider.base_url}"\n'
            'endpoint_format = "chat_completions"\ndefault_model = "fake-model"\n'
            f'[store]\nurl = "{postgres_url}"\n'
        )
        ran = await anyio.run_process(
            [sys.executable, "-m", "kun", "run", "a.py?", "--home", str(home)],
            cwd=workspace, env=_environ(), check=False,
        )  # fmt: skip
    assert ran.returncode == 0, ran.stderr.decode()
    assert "a.py prints a." in ran.stdout.decode()
    async with PostgresEventStore(postgres_url) as store:
        [thread] = store.list_threads()
        state = replay(store.read(thread))
    assert state.turns[0].status == "completed" and state.settings.workspace == str(workspace)
    assert not (home / "threads").exists()
