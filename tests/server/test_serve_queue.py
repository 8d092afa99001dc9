"""A burst of turns queued over HTTP on one thread of a real ``kun serve``
(``multitask`` ``enqueue``), against the fake provider: none is lost, each
gets its own id, and they run one at a time in the order they were queued."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from kun.domain.reduce import replay
from kun.store.jsonl import JsonlEventStore
from kun.testing.fake_provider import FakeProvider
from tests.server.test_serve import ANSWER, _serve, _workspace

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BURST = 200


def _last_user_text(body: Any) -> str:
    said = [m["content"] for m in body["messages"] if m["role"] == "user"]
    last = said[-1]
    return last if isinstance(last, str) else "".join(p.get("text", "") for p in last)


async def test_a_burst_of_enqueued_turns_all_run_in_order(tmp_path: Path) -> None:
    async with FakeProvider([ANSWER] * BURST, format="chat_completions") as provider:
        async with _serve(tmp_path, provider.base_url) as (_, client):
            created = await client.post("/v1/threads", json={"workspace": _workspace(tmp_path)})
            thread = created.json()["thread_id"]
            answers: dict[int, httpx.Response] = {}

            async def send(n: int) -> None:
                answers[n] = await client.post(
                    f"/v1/threads/{thread}/turns",
                    json={"text": f"message {n}", "multitask": "enqueue"},
                )

            async with anyio.create_task_group() as tg:
                for n in range(BURST):
                    tg.start_soon(send, n)
            assert {r.status_code for r in answers.values()} == {202}, [
                r.text for r in answers.values() if r.status_code != 202
            ][:3]
            ids = {r.json()["turn_id"] for r in answers.values()}
            assert len(ids) == BURST
            # A turn sent while the queue is empty starts at once (the one
            # before it may have ended already); the rest wait.
            statuses = [r.json()["status"] for r in answers.values()]
            assert set(statuses) == {"running", "queued"}
            with anyio.fail_after(120):
                while True:
                    state = (await client.get(f"/v1/threads/{thread}")).json()
                    if all(t["status"] not in ("queued", "running") for t in state["turns"]):
                        break
                    await anyio.sleep(0.1)
    turns = replay(JsonlEventStore(tmp_path / "home").read(thread)).turns
    assert {t.turn_id for t in turns} == ids
    assert [t.status for t in turns] == ["completed"] * BURST
    texts = [t.items[0].text for t in turns]  # type: ignore[attr-defined]
    assert sorted(texts) == sorted(f"message {n}" for n in range(BURST))
    for before, after in itertools.pairwise(turns):
        assert before.ended_at is not None and before.ended_at <= after.started_at
        assert before.started_seq < after.started_seq
    assert [_last_user_text(r.json) for r in provider.requests] == texts
