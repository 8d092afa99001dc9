"""``/openapi.json`` and the server agree, route by route, read from the
app's own route table: the methods a path takes (the ``Allow`` of a 405),
which bodies are refused as malformed (the document's verdict on each
candidate body is the server's), and the shape of every JSON answer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from msgspec import json
from starlette.routing import Route

from kun.model.scripted import text_reply
from kun.server.web import web_routes
from tests.server.support import Api, api

pytestmark = pytest.mark.anyio

PAGES = frozenset(r.path for r in web_routes() if isinstance(r, Route))
DECODE_REFUSALS = {"invalid_body", "malformed_json", "duplicate_key", "unsupported_media_type"}
REF = "#/components/schemas/"
JSON = {"content-type": "application/json"}


def _validator(doc: dict[str, Any], schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({**schema, "components": doc["components"]})


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].removeprefix(REF)]
    return schema


def _example(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A value the schema allows: its example, else the least one."""
    schema = _resolve(doc, schema)
    if "examples" in schema:
        return schema["examples"][0]
    if "enum" in schema:
        return schema["enum"][0]
    if "anyOf" in schema:
        return _example(doc, schema["anyOf"][0])
    kind = schema.get("type")
    if kind == "object":
        required = schema.get("required", [])
        return {n: _example(doc, schema["properties"][n]) for n in required}
    if kind == "string":
        return "aGk=" if schema.get("contentEncoding") == "base64" else "x"
    if kind in ("integer", "number"):
        return max(schema.get("minimum", 1), 1)
    return {"boolean": False, "array": [], "null": None}[kind]


def _candidates(doc: dict[str, Any], schema: dict[str, Any]) -> list[Any]:
    """Bodies to ask both the document and the server about: each field
    with an allowed value, a value of another type, edge values; a field
    nobody knows; bodies that are not objects."""
    schema = _resolve(doc, schema)
    base = _example(doc, schema)
    found: list[Any] = [base, {**base, "zzz": 1}, [], "x", None, 5]
    for name, field in schema.get("properties", {}).items():
        edges = [_example(doc, field), 5, "x", True, None, {}, [], 0, -1, 1 << 63, 1.5, "",
                 "two\nlines", "x" * 300, {"zzz": 1}]  # fmt: skip
        found += [{**base, name: value} for value in edges]
    return found


def _url(path: str, thread: str) -> str:
    return path.replace("{thread_id}", thread).replace("{", "").replace("}", "")


async def _document(a: Api) -> dict[str, Any]:
    doc: dict[str, Any] = (await a.client.get("/openapi.json")).json()
    return doc


def _served(a: Api) -> dict[str, set[str]]:
    served: dict[str, set[str]] = {}
    for route in a.app.routes:
        if isinstance(route, Route) and route.path not in PAGES:
            path = route.path.replace(":path}", "}")
            served.setdefault(path, set()).update(route.methods or ())
    return served


async def test_a_405_allows_exactly_the_documented_methods(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        doc = await _document(a)
        thread = await a.new_thread()
        served = _served(a)
        assert set(served) == set(doc["paths"])
        for path, methods in served.items():
            documented = {m.upper() for m in doc["paths"][path]}
            assert methods - {"HEAD"} == documented, path
            url = _url(path, thread)
            expected = _documented_for(doc, url)
            for method in {"GET", "POST", "PATCH", "PUT", "DELETE"} - expected:
                response = await a.client.request(method, url)
                assert response.status_code == 405, (method, path, response.text)
                allowed = set(response.headers["allow"].split(", "))
                assert allowed == expected, (method, path, allowed)


def _documented_for(doc: dict[str, Any], url: str) -> set[str]:
    """Every method the document gives a path that ``url`` is an instance
    of (``/v1/threads/import`` is also ``/v1/threads/{thread_id}``), and
    ``HEAD`` wherever ``GET`` is."""
    methods: set[str] = set()
    for path, operations in doc["paths"].items():
        if re.fullmatch(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(path)), url):
            methods |= {m.upper() for m in operations}
    return methods | ({"HEAD"} if "GET" in methods else set())


async def test_the_document_and_the_server_agree_on_every_body(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        doc = await _document(a)
        thread = await a.new_thread()
        asked = 0
        for path, operations in doc["paths"].items():
            for method, operation in operations.items():
                content = operation.get("requestBody", {}).get("content", {})
                if "requestBody" not in operation and method in ("post", "patch"):
                    # no body documented: the route must not be reading one
                    response = await a.client.request(
                        method.upper(), _url(path, thread), content=b'{"zzz": 1}', headers=JSON
                    )
                    code = response.json().get("error", {}).get("code")
                    assert code not in DECODE_REFUSALS, (method, path, response.text)
                if "application/json" not in content:
                    continue
                schema = content["application/json"]["schema"]
                validator = _validator(doc, schema)
                for body in _candidates(doc, schema):
                    if isinstance(body, dict) and path == "/v1/threads" and method == "post":
                        body = {"workspace": str(a.workspace), **body}
                    response = await a.client.request(
                        method.upper(), _url(path, thread), content=json.encode(body), headers=JSON
                    )
                    assert response.status_code < 500, (path, body, response.text)
                    code = response.json().get("error", {}).get("code")
                    refused = code in DECODE_REFUSALS
                    assert refused != validator.is_valid(body), (method, path, body, response.text)
                    asked += 1
        assert asked > 400


async def _answers(a: Api) -> list[tuple[str, str, httpx.Response]]:
    """A thread's life over the API: every route with a JSON answer, and
    the route template it was asked through."""
    said: list[tuple[str, str, httpx.Response]] = []

    async def ask(method: str, template: str, url: str, **kwargs: Any) -> httpx.Response:
        response = await a.client.request(method, url, **kwargs)
        assert response.status_code < 400, (method, url, response.text)
        said.append((method.lower(), template, response))
        return response

    t = "/v1/threads/{thread_id}"
    created = await ask("POST", "/v1/threads", "/v1/threads", json={"workspace": str(a.workspace)})
    thread = created.json()["thread_id"]
    one = f"/v1/threads/{thread}"
    await ask("GET", "/v1/threads", "/v1/threads")
    await ask("PATCH", t, one, json={"title": "drift", "limits": {"max_steps": 9}})
    started = await ask("POST", f"{t}/turns", f"{one}/turns", json={"text": "hi"})
    turn = started.json()["turn_id"]
    await a.wait(thread, turn)
    await ask("GET", f"{t}/turns/{{turn_id}}", f"{one}/turns/{turn}")
    await ask("GET", f"{t}/turns/{{turn_id}}/goal-resume", f"{one}/turns/{turn}/goal-resume")
    await ask("GET", t, one)
    await ask("POST", f"{t}/compact", f"{one}/compact")
    await ask("POST", f"{t}/fork", f"{one}/fork", json={"at_turn": 1})
    await ask("POST", f"{t}/rewind", f"{one}/rewind", json={"before_turn": 1})
    await ask("POST", f"{t}/rewind/undo", f"{one}/rewind/undo")
    await ask("GET", f"{t}/usage", f"{one}/usage")
    await ask("GET", "/v1/usage", "/v1/usage", params={"thread": [thread, thread]})
    bundle = (await a.client.get(f"{one}/export")).content
    await ask("POST", "/v1/threads/import", "/v1/threads/import", content=bundle)
    await ask("PUT", f"{t}/goal", f"{one}/goal", json={"objective": "ship", "token_budget": 9})
    await ask("PATCH", f"{t}/goal", f"{one}/goal", json={"status": "paused"})
    await ask("DELETE", f"{t}/goal", f"{one}/goal")
    await ask("POST", f"{t}/gc", f"{one}/gc", json={})
    await ask("POST", "/v1/reconcile", "/v1/reconcile")
    await ask("GET", "/v1/providers", "/v1/providers")
    trashed = await ask("DELETE", t, one)
    await ask("GET", "/v1/trash", "/v1/trash")
    entry = trashed.json()["entry"]
    await ask("POST", "/v1/trash/{entry}/restore", f"/v1/trash/{entry}/restore")
    return said


async def test_every_json_answer_is_what_the_document_says(tmp_path: Path) -> None:
    async with api(tmp_path, [text_reply("hello")] * 3) as a:
        doc = await _document(a)
        said = await _answers(a)
    checked = set()
    for method, template, response in said:
        answers = doc["paths"][template][method]["responses"]
        assert str(response.status_code) in answers, (template, response.status_code)
        content = answers[str(response.status_code)]["content"]
        schema = content[response.headers["content-type"]]["schema"]
        _validator(doc, schema).validate(response.json())
        checked.add((method, template))
    json_routes = {
        (method, path)
        for path, operations in doc["paths"].items()
        for method, operation in operations.items()
        for answer in operation["responses"].values()
        if "application/json" in answer.get("content", {}) and path != "/openapi.json"
        and "Error" not in str(answer["content"]["application/json"]["schema"])
    }  # fmt: skip
    untried = {("post", "/v1/approvals/{approval_id}"), ("post", "/v1/user-inputs/{request_id}"),
               ("post", "/v1/threads/{thread_id}/turns/{turn_id}/steer"),
               ("post", "/v1/threads/{thread_id}/turns/{turn_id}/interrupt")}  # fmt: skip
    assert json_routes - checked == untried


async def test_the_docs_page_draws_the_document_from_this_origin(tmp_path: Path) -> None:
    async with api(tmp_path) as a:
        page = await a.client.get("/docs")
        script = await a.client.get("/static/docs.js")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert '<script src="/static/docs.js" defer></script>' in page.text
    assert "<script>" not in page.text and "http" not in page.text.replace("http-equiv", "")
    assert '"/openapi.json"' in script.text and "innerHTML" not in script.text
