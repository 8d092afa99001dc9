"""Threads over HTTP: create, list (paged, newest first), get (the
projection equals a replay of the log), settings, rewind/undo, fork, usage,
transcript and the raw log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from kun.contracts.model import UsageChunk
from kun.contracts.usage import UsageSnapshot
from kun.model.scripted import text_reply, tool_reply
from kun.store.jsonl import JsonlEventStore
from tests.server.support import api

pytestmark = pytest.mark.anyio


async def test_create_get_and_list_newest_first_in_pages(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        ids = [await a.new_thread(title=f"t{n}") for n in range(5)]
        got = (await a.client.get(f"/v1/threads/{ids[0]}")).json()
        assert got == msgspec.json.decode(msgspec.json.encode(a.log_state(ids[0])))
        assert got["settings"]["title"] == "t0" and got["settings"]["title_source"] == "user"
        seen: list[str] = []
        cursor = None
        while True:
            query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            page = (await a.client.get("/v1/threads", params=query)).json()
            seen += [t["thread_id"] for t in page["threads"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == ids[::-1]


async def test_the_list_filters_by_title_workspace_or_id_in_pages(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        ids = [await a.new_thread(title=f"{'Deploy' if n % 2 else 'chat'} {n}") for n in range(7)]
        deploys = [t for n, t in enumerate(ids) if n % 2][::-1]
        seen: list[str] = []
        cursor = None
        while True:
            query = {"limit": 2, "q": " dePLOY ", **({"cursor": cursor} if cursor else {})}
            page = (await a.client.get("/v1/threads", params=query)).json()
            seen += [t["thread_id"] for t in page["threads"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == deploys
        by_id = (await a.client.get("/v1/threads", params={"q": ids[2][-6:]})).json()
        assert [t["thread_id"] for t in by_id["threads"]] == [ids[2]]
        workspace = (await a.client.get("/v1/threads", params={"q": tmp_path.name})).json()
        assert len(workspace["threads"]) == len(ids)
        none = (await a.client.get("/v1/threads", params={"q": "no such words"})).json()
        assert none == {"threads": [], "next_cursor": None, "home": str(a.home)}


async def test_settings_change_the_log_and_the_turns(tmp_path: Path) -> None:
    async with api(tmp_path, [text_reply("ok")]) as a:
        thread = await a.new_thread()
        response = await a.client.patch(
            f"/v1/threads/{thread}",
            json={
                "title": "Renamed",
                "approval_policy": "never",
                "model": "other-model",
                "reasoning_effort": "high",
                "limits": {"max_steps": 3},
            },
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["reasoning_effort"] == "high" and body["limits"]["max_steps"] == 3
        settings = a.log_state(thread).settings
        assert (settings.title, settings.approval_policy, settings.model) == (
            "Renamed",
            "never",
            "other-model",
        )
        turn = await a.start(thread, "hi")
        await a.wait(thread, turn)
        assert a.model.calls[0].request.reasoning_effort == "high"


async def test_rewind_undo_and_fork(tmp_path: Path) -> None:
    async with api(tmp_path, [text_reply("one"), text_reply("two")]) as a:
        thread = await a.new_thread()
        first = await a.start(thread, "first")
        await a.wait(thread, first)
        second = await a.start(thread, "second")
        await a.wait(thread, second)
        rewound = await a.client.post(f"/v1/threads/{thread}/rewind", json={"before_turn": "2"})
        assert rewound.status_code == 200, rewound.text
        assert rewound.json()["turn_id"] == second and rewound.json()["hidden"] == 1
        assert [t.turn_id for t in a.log_state(thread).visible_turns] == [first]
        hidden = await a.client.post(f"/v1/threads/{thread}/rewind", json={"before_turn": "2"})
        assert hidden.status_code == 409, hidden.text
        assert hidden.json()["error"]["code"] == "turn_already_hidden"
        assert "turn 2" in hidden.json()["error"]["message"]
        undone = await a.client.post(f"/v1/threads/{thread}/rewind/undo")
        assert undone.json()["restored"] == 1
        assert len(a.log_state(thread).visible_turns) == 2
        again = await a.client.post(f"/v1/threads/{thread}/rewind/undo")
        assert again.status_code == 409 and again.json()["error"]["code"] == "nothing_to_undo"
        forked = await a.client.post(f"/v1/threads/{thread}/fork", json={"at_turn": 1})
        assert forked.status_code == 201, forked.text
        new = forked.json()["thread_id"]
        assert [t.turn_id for t in a.log_state(new).turns] == [first]
        at_seq = a.log_state(thread).turns[1].started_seq - 1
        cut = await a.client.post(f"/v1/threads/{thread}/fork", json={"at_seq": at_seq})
        assert cut.json()["source_seq"] == at_seq
        assert [t.turn_id for t in a.log_state(cut.json()["thread_id"]).turns] == [first]
        whole = await a.client.post(f"/v1/threads/{thread}/fork", json={})
        assert len(a.log_state(whole.json()["thread_id"]).turns) == 2


def _kun(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kun", *args], capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.mark.slow
async def test_usage_transcript_and_log_are_what_the_cli_prints(tmp_path: Path) -> None:
    async with api(tmp_path, [text_reply("one"), text_reply("two")]) as a:
        t1, t2 = await a.new_thread(), await a.new_thread()
        await a.wait(t1, await a.start(t1, "first"))
        await a.wait(t2, await a.start(t2, "second"))
        home = str(a.home)
        diff = (await a.client.get("/v1/usage", params=[("thread", t1), ("thread", t2)])).json()
        assert diff["text"] + "\n" == _kun("usage", t1, t2, "--home", home)
        cli = msgspec.json.decode(_kun("usage", t1, t2, "--json", "--home", home))
        assert diff["threads"] == cli["threads"]
        one = (await a.client.get(f"/v1/threads/{t1}/usage")).json()
        assert one["text"] + "\n" == _kun("usage", t1, "--home", home)
        transcript = await a.client.get(f"/v1/threads/{t1}/transcript")
        assert transcript.text == _kun("replay", t1, "--home", home)
        log = await a.client.get(f"/v1/threads/{t1}/log")
        assert log.headers["content-type"] == "application/x-ndjson"
        assert log.content == (a.home / "threads" / t1 / "events.jsonl").read_bytes()


async def test_a_thread_another_process_writes_is_read_but_not_written(tmp_path: Path) -> None:
    async with api(tmp_path, [text_reply("one")]) as a:
        thread = await a.new_thread()
        await a.wait(thread, await a.start(thread, "first"))
    async with JsonlEventStore(a.home) as other:
        await other.claim(thread)
        async with api(tmp_path) as b:
            got = await b.client.get(f"/v1/threads/{thread}")
            assert got.status_code == 200 and got.json() == _plain(b.log_state(thread))
            turn = got.json()["turns"][0]["turn_id"]
            assert (await b.client.get(f"/v1/threads/{thread}/turns/{turn}")).status_code == 200
            refused = await b.client.post(f"/v1/threads/{thread}/turns", json={"text": "x"})
            assert refused.status_code == 409
            assert refused.json()["error"]["code"] == "thread_locked"


def _plain(value: object) -> object:
    return msgspec.json.decode(msgspec.json.encode(value))


async def test_a_threads_turn_token_limit_is_set_over_http_and_ends_its_turns(
    tmp_path: Path,
) -> None:
    usage = UsageChunk(usage=UsageSnapshot(prompt_tokens=900, completion_tokens=10))
    *call, done = tool_reply("read_file", {"path": "a.py"})
    async with api(tmp_path, [[*call, usage, done], text_reply("done")]) as a:
        thread = await a.new_thread()
        response = await a.client.patch(
            f"/v1/threads/{thread}", json={"limits": {"max_turn_tokens": 500}}
        )
        assert response.status_code == 200, response.text
        limits = response.json()["limits"]
        assert limits["max_turn_tokens"] == 500 and limits["max_steps"] == 200
        turn = await a.wait(thread, await a.start(thread, "read a.py"))
        assert turn["status"] == "failed" and turn["error"]["code"] == "turn_token_limit"


async def test_a_turn_is_named_the_same_ways_in_rewind_and_fork(tmp_path: Path) -> None:
    """Its number as a JSON number or a string of digits, its id, or an
    unambiguous prefix of its id: ``before_turn`` and ``at_turn`` alike."""
    async with api(tmp_path, [text_reply(w) for w in ("one", "two", "three")]) as a:
        thread = await a.new_thread()
        turns = [await a.wait(thread, await a.start(thread, w)) for w in ("1", "2", "3")]
        second = turns[1]["turn_id"]
        names = [2, "2", second, second[:-3]]
        fork = f"/v1/threads/{thread}/fork"
        forked = [await a.client.post(fork, json={"at_turn": name}) for name in names]
        assert [f.status_code for f in forked] == [201] * 4, [f.text for f in forked]
        assert len({f.json()["source_seq"] for f in forked}) == 1
        for name in names:
            rewound = await a.client.post(
                f"/v1/threads/{thread}/rewind", json={"before_turn": name}
            )
            assert rewound.status_code == 200, rewound.text
            assert (rewound.json()["turn_number"], rewound.json()["turn_id"]) == (2, second)
            await a.client.post(f"/v1/threads/{thread}/rewind/undo")
        for field, route in (("at_turn", "fork"), ("before_turn", "rewind")):
            missing = await a.client.post(f"/v1/threads/{thread}/{route}", json={field: 4})
            assert missing.status_code == 404, missing.text
            assert missing.json()["error"]["code"] == "turn_not_found"


async def test_a_thread_is_named_by_a_unique_prefix_as_on_the_command_line(
    tmp_path: Path,
) -> None:
    """``kun threads`` shows the shortest unique prefix of each id, and
    ``kun --server URL replay PREFIX`` must find what it showed."""
    async with api(tmp_path) as a:
        one, two = await a.new_thread(), await a.new_thread()
        common = next(i for i, (x, y) in enumerate(zip(one, two, strict=True)) if x != y)
        shown = await a.client.get(f"/v1/threads/{one[: common + 1]}")
        assert shown.status_code == 200, shown.text
        assert shown.json()["thread_id"] == one
        usage = await a.client.get(f"/v1/threads/{one[: common + 1]}/usage")
        assert usage.status_code == 200, usage.text
        both = await a.client.get(f"/v1/threads/{one[:common]}")
        assert (both.status_code, both.json()["error"]["code"]) == (400, "ambiguous_thread_id")
        none = await a.client.get("/v1/threads/thr_zzzzzzzz")
        assert none.status_code == 404
