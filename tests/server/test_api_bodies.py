"""How every JSON route reads its body: JSON by ``Content-Type`` only
(415 otherwise), a key given twice refused at any depth (400
``duplicate_key``), and a field too long for the machine refused as that
field, not a 500."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from kun.server import bodies
from kun.server.openapi import OPERATIONS
from tests.server.support import Api, api

pytestmark = pytest.mark.anyio

# One valid field of each body, to give twice.
FIELD: dict[type[object], tuple[str, str, str]] = {
    bodies.CreateThread: ("title", '"one"', '"two"'),
    bodies.UpdateThread: ("title", '"one"', '"two"'),
    bodies.StartTurn: ("text", '"one"', '"two"'),
    bodies.Steer: ("text", '"one"', '"two"'),
    bodies.Interrupt: ("discard", "false", "true"),
    bodies.RewindThread: ("before_turn", '"1"', '"2"'),
    bodies.Fork: ("at_turn", "1", "2"),
    bodies.AnswerApproval: ("decision", '"denied"', '"approved"'),
    bodies.AnswerUserInput: ("answer", '"no"', '"yes"'),
    bodies.SetGoal: ("objective", '"one"', '"two"'),
    bodies.ChangeGoal: ("status", '"paused"', '"active"'),
    bodies.RestoreThread: ("as_id", '"thr_a"', '"thr_b"'),
    bodies.Collect: ("confirm", "false", "true"),
}
JSON_ROUTES = [(m, p, kind) for m, p, _, kind, _ in OPERATIONS if kind is not None]


def _url(path: str, thread: str) -> str:
    return path.replace("{thread_id}", thread).replace("{", "").replace("}", "")


async def _post(
    a: Api, method: str, url: str, body: bytes, content_type: str | None
) -> httpx.Response:
    headers = {"content-type": content_type} if content_type is not None else {}
    return await a.client.request(method, url, content=body, headers=headers)


def _refused(response: httpx.Response, status: int, code: str, field: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["field"]) == (code, field), error


async def test_every_json_route_refuses_a_key_given_twice(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        assert {kind for *_, kind in JSON_ROUTES} == {*FIELD, bodies.NoBody}
        for method, path, kind in JSON_ROUTES:
            if kind is bodies.NoBody:
                continue
            name, first, then = FIELD[kind]
            body = f'{{"{name}": {first}, "{name}": {then}}}'.encode()
            response = await _post(a, method, _url(path, thread), body, "application/json")
            _refused(response, 400, "duplicate_key", name)
            assert repr(name) in response.json()["error"]["message"]


async def test_a_duplicate_deep_inside_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        body = b'{"title": "t", "limits": {"max_steps": 3, "max_steps": 4}}'
        _refused(await _post(a, "POST", "/v1/threads", body, "application/json"), 400,
                 "duplicate_key", "limits.max_steps")  # fmt: skip
        assert (await a.client.get("/v1/threads")).json()["threads"] == []
        thread = await a.new_thread()
        attachment = b'{"name": "a", "name": "b", "mime_type": "image/png", "data": ""}'
        body = b'{"text": "x", "attachments": [' + attachment + b"]}"
        _refused(await _post(a, "POST", f"/v1/threads/{thread}/turns", body, "application/json"),
                 400, "duplicate_key", "attachments[0].name")  # fmt: skip


async def test_an_approval_cannot_be_flipped_by_a_second_decision(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        body = b'{"decision": "denied", "decision": "approved"}'
        response = await _post(a, "POST", "/v1/approvals/apr_x", body, "application/json")
        _refused(response, 400, "duplicate_key", "decision")


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x",
     "application/json; charset=latin-1", "application/jsonx"],
)  # fmt: skip
async def test_every_json_route_wants_application_json(
    tmp_path: Path, content_type: str | None
) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        for method, path, _ in JSON_ROUTES:
            response = await _post(a, method, _url(path, thread), b"{}", content_type)
            _refused(response, 415, "unsupported_media_type", "Content-Type")
        assert len((await a.client.get("/v1/threads")).json()["threads"]) == 1


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
)
async def test_json_with_or_without_a_utf8_charset_is_read(
    tmp_path: Path, content_type: str
) -> None:
    async with api(tmp_path) as a:
        body = f'{{"workspace": "{a.workspace}", "title": "é"}}'.encode()
        response = await _post(a, "POST", "/v1/threads", body, content_type)
        assert response.status_code == 201, response.text


async def test_an_empty_body_needs_no_content_type(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        thread = await a.new_thread()
        response = await a.client.post(f"/v1/threads/{thread}/compact")
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("workspace", ["/" + "w" * 100_000, "/tmp/" + "w" * 300])
async def test_a_workspace_too_long_for_the_machine_is_a_400(
    tmp_path: Path, workspace: str
) -> None:
    async with api(tmp_path) as a:
        response = await a.client.post("/v1/threads", json={"workspace": workspace})
        assert response.status_code == 400, response.text[:300]
        assert response.json()["error"]["field"] == "workspace"


@pytest.mark.parametrize("workspace", ["/" + "w" * 60_000, "/tmp/" + "w" * 300])
async def test_an_import_workspace_too_long_for_the_machine_is_a_400(
    tmp_path: Path, workspace: str
) -> None:
    async with api(tmp_path) as a:
        url = "/v1/threads/import"
        response = await a.client.post(url, params={"workspace": workspace}, content=b"x")
        _refused(response, 400, "invalid_workspace", "workspace")


async def test_an_import_file_name_too_long_for_the_machine_is_cut(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        response = await a.client.post(
            "/v1/threads/import", params={"name": "w" * 60_000}, content=b"x"
        )
        assert response.status_code == 400, response.text[:300]
        assert response.json()["error"]["code"] == "bundle_refused"
