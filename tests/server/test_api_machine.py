"""A hypothesis state machine over the HTTP API: create, start (quick or
parked in a tool), steer, interrupt (discard or seal), rewind, undo, fork
and answer, in any order, with the status each must get predicted from a
model of the threads; after every step each thread's projection fetched
over HTTP equals a fresh replay of its log."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import msgspec
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kun.contracts.items import ToolResult, UserMessage
from kun.contracts.model import ModelRequest, ModelStreamChunk
from kun.model.scripted import text_reply, tool_reply
from kun.tools.base import ToolContext, ToolEffect, ToolOutput, make_spec
from tests.runtime.support import host_with
from tests.server.support import Api, api

PARK = "park"


@dataclass
class Parking:
    """A tool that waits until its turn is interrupted; counts its runs."""

    runs: int = 0
    name: str = "parking"

    @property
    def spec(self) -> Any:
        return make_spec(self.name, "waits until interrupted", {})

    @property
    def effect(self) -> ToolEffect:
        return "read"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.runs += 1
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


_calls = itertools.count()


def respond(request: ModelRequest) -> Iterator[ModelStreamChunk]:
    """Park when the turn's prompt says so (once), else answer."""
    last = request.history[-1] if request.history else None
    if isinstance(last, UserMessage) and last.text == PARK:
        yield from tool_reply("parking", call_id=f"call_{next(_calls)}")
    elif isinstance(last, ToolResult):
        yield from text_reply("after the tool")
    else:
        yield from text_reply("ok")


def _plain(value: Any) -> Any:
    return msgspec.json.decode(msgspec.json.encode(value))


class ApiMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="kun-api-machine-"))
        self.parking = Parking()
        self._portal_cm = start_blocking_portal("asyncio")
        self.portal: BlockingPortal = self._portal_cm.__enter__()
        self._api_cm = self.portal.wrap_async_context_manager(
            api(self.tmp, respond, tools=host_with(self.parking))
        )
        self.api: Api = self._api_cm.__enter__()
        self.turns: dict[str, list[str]] = {}
        self.running: dict[str, str] = {}
        self.rewinds: dict[str, int] = {}

    def teardown(self) -> None:
        try:
            self._api_cm.__exit__(None, None, None)
            self._portal_cm.__exit__(None, None, None)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.portal.call(lambda: self.api.client.request(method, path, **kwargs))

    def _thread(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(sorted(self.turns)))

    @rule()
    def create(self) -> None:
        response = self.call("POST", "/v1/threads", json={"workspace": str(self.api.workspace)})
        assert response.status_code == 201, response.text
        self.turns[response.json()["thread_id"]] = []

    @precondition(lambda self: self.turns)
    @rule(data=st.data(), park=st.booleans())
    def start(self, data: st.DataObject, park: bool) -> None:
        thread = self._thread(data)
        runs = self.parking.runs
        response = self.call(
            "POST", f"/v1/threads/{thread}/turns", json={"text": PARK if park else "hi"}
        )
        if thread in self.running:
            assert response.status_code == 409, response.text
            return
        assert response.status_code == 202, response.text
        turn = response.json()["turn_id"]
        self.turns[thread].append(turn)
        if park:
            self.running[thread] = turn
            self.portal.call(self._until, lambda: self.parking.runs > runs)
        else:
            self.portal.call(self.api.wait, thread, turn)

    async def _until(self, condition: Any) -> None:
        with anyio.fail_after(10):
            while True:
                if condition():
                    return
                await anyio.sleep(0.005)

    @precondition(lambda self: self.turns)
    @rule(data=st.data())
    def steer(self, data: st.DataObject) -> None:
        thread = self._thread(data)
        turn = self.running.get(thread) or (self.turns[thread] or ["turn_none"])[-1]
        response = self.call(
            "POST", f"/v1/threads/{thread}/turns/{turn}/steer", json={"text": "also this"}
        )
        expected = 202 if thread in self.running else 409 if self.turns[thread] else 404
        assert response.status_code == expected, response.text

    @precondition(lambda self: self.turns)
    @rule(data=st.data(), discard=st.booleans())
    def interrupt(self, data: st.DataObject, discard: bool) -> None:
        thread = self._thread(data)
        turn = self.running.pop(thread, None)
        target = turn or (self.turns[thread] or ["turn_none"])[-1]
        response = self.call(
            "POST", f"/v1/threads/{thread}/turns/{target}/interrupt", json={"discard": discard}
        )
        if turn is None:
            assert response.status_code == (409 if self.turns[thread] else 404), response.text
            return
        assert response.status_code == 200, response.text
        settled = response.json()
        assert settled["status"] == "aborted"
        if discard:  # the user's words stay: the prompt, and steering the turn never read
            items = settled["items"]
            assert {i["type"] for i in items} == {"user_message"}
            assert not items[0].get("steered") and all(i.get("steered") for i in items[1:])

    @precondition(lambda self: self.turns)
    @rule(data=st.data(), number=st.integers(1, 4))
    def rewind(self, data: st.DataObject, number: int) -> None:
        thread = self._thread(data)
        turns = self.call("GET", f"/v1/threads/{thread}").json()["turns"]
        hidden = number <= len(turns) and turns[number - 1]["hidden_by"] is not None
        response = self.call(
            "POST", f"/v1/threads/{thread}/rewind", json={"before_turn": str(number)}
        )
        if number > len(self.turns[thread]):
            assert response.status_code == 404, response.text
        elif thread in self.running:
            assert response.status_code == 409, response.text
        elif hidden:
            assert response.status_code == 409, response.text
            assert response.json()["error"]["code"] == "turn_already_hidden"
        else:
            assert response.status_code == 200, response.text

    @precondition(lambda self: self.turns)
    @rule(data=st.data())
    def undo(self, data: st.DataObject) -> None:
        thread = self._thread(data)
        response = self.call("POST", f"/v1/threads/{thread}/rewind/undo")
        assert response.status_code in (200, 409), response.text
        if thread in self.running:
            assert response.status_code == 409

    @precondition(lambda self: self.turns)
    @rule(data=st.data(), at_turn=st.none() | st.integers(1, 3))
    def fork(self, data: st.DataObject, at_turn: int | None) -> None:
        thread = self._thread(data)
        body = {} if at_turn is None else {"at_turn": at_turn}
        response = self.call("POST", f"/v1/threads/{thread}/fork", json=body)
        if at_turn is not None and at_turn > len(self.turns[thread]):
            assert response.status_code == 404, response.text
            return
        assert response.status_code == 201, response.text
        new = response.json()["thread_id"]
        self.turns[new] = [
            t["turn_id"] for t in self.call("GET", f"/v1/threads/{new}").json()["turns"]
        ]

    @rule(kind=st.sampled_from(["approvals", "user-inputs"]))
    def answer_unknown(self, kind: str) -> None:
        body = {"decision": "approved"} if kind == "approvals" else {"answer": "x"}
        response = self.call("POST", f"/v1/{kind}/nope_{kind}", json=body)
        assert response.status_code == 409, response.text

    @invariant()
    def projection_is_a_replay_of_the_log(self) -> None:
        for thread in self.turns:
            fetched = self.call("GET", f"/v1/threads/{thread}")
            assert fetched.status_code == 200, fetched.text
            assert fetched.json() == _plain(self.api.log_state(thread))


ApiMachine.TestCase.settings = settings(max_examples=12, stateful_step_count=10, deadline=None)
TestApiMachine = ApiMachine.TestCase
