"""A refusal is a typed error whose text is the server's message; an answer
that is not kun's, and a server out of reach, are one line each."""

from __future__ import annotations

import socket
from collections.abc import Callable

import httpx
import pytest

from kun.app.refusals import Refused
from kun.client import (
    ApiError,
    BadRequest,
    Conflict,
    KunClient,
    NotFound,
    ServerFailed,
    Unauthorized,
    Unreachable,
)
from kun.errors import UserMistake

Handler = Callable[[httpx.Request], httpx.Response]


def _client(handle: Handler) -> KunClient:
    return KunClient("http://kun", transport=httpx.MockTransport(handle))


def _refusing(status: int, code: str) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        error = {"code": code, "message": f"{code} said so", "field": "thread_id"}
        return httpx.Response(status, json={"error": error})

    return handle


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, BadRequest), (413, BadRequest), (401, Unauthorized), (404, NotFound),
     (409, Conflict), (500, ServerFailed), (503, ServerFailed)],
)  # fmt: skip
def test_a_refusal_is_the_class_its_status_names(status: int, kind: type[Refused]) -> None:
    with _client(_refusing(status, "why")) as kun, pytest.raises(kind) as refused:
        kun.thread("thr_a")
    assert str(refused.value) == "why said so"
    assert (refused.value.status, refused.value.code, refused.value.field) == (
        status,
        "why",
        "thread_id",
    )
    assert isinstance(refused.value, ApiError) and isinstance(refused.value, UserMistake)


def test_a_proxy_page_is_one_line() -> None:
    page = "<html>\n<head><title>502 Bad\n Gateway</title></head>\n<body>nginx</body></html>"

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text=page, headers={"content-type": "text/html"})

    with _client(handle) as kun, pytest.raises(ServerFailed) as refused:
        kun.threads()
    assert str(refused.value) == "the answer is not kun's (text/html: '502 Bad Gateway')"
    assert refused.value.code == "not_kun"


def test_json_that_is_not_the_answer_is_not_kuns() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"hello": "world"})

    with _client(handle) as kun, pytest.raises(Refused) as refused:
        kun.thread("thr_a")
    assert refused.value.code == "not_kun"
    assert "\n" not in str(refused.value)


def test_an_unknown_host_says_so() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        try:
            raise socket.gaierror(-2, "Name or service not known")
        except socket.gaierror as exc:
            raise httpx.ConnectError("[Errno -2] Name or service not known") from exc

    with _client(handle) as kun, pytest.raises(Unreachable) as down:
        kun.threads()
    assert str(down.value) == (
        "--server http://kun: no such host ([Errno -2] Name or service not known)"
    )


def test_a_lost_connection_says_so() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")

    with _client(handle) as kun, pytest.raises(Unreachable) as lost:
        kun.threads()
    assert str(lost.value) == (
        "lost the server at http://kun: Server disconnected without sending a response."
    )


def test_a_url_that_is_not_http_says_so() -> None:
    with KunClient("ftp://kun") as kun, pytest.raises(Unreachable) as wrong:
        kun.threads()
    assert str(wrong.value) == "--server ftp://kun: not an http:// or https:// URL"


def test_explained_says_which_variable_holds_the_token() -> None:
    from kun.client import explained

    with _client(_refusing(401, "unauthorized")) as kun:
        with pytest.raises(UserMistake) as missing:
            with explained("http://kun", token_given=False):
                kun.threads()
        with pytest.raises(UserMistake) as wrong:
            with explained("http://kun", token_given=True, token_env="MY_TOKEN"):
                kun.threads()
    assert str(missing.value) == (
        "the server at http://kun wants a token: put it in $KUN_TOKEN "
        "(or name its variable with --token-env VAR)"
    )
    assert str(wrong.value) == "the server at http://kun refused the token in $MY_TOKEN"


def test_explained_turns_a_missing_workspace_into_the_run_that_gives_one() -> None:
    from kun.client import explained

    message = "thread thr_a has no workspace; PATCH /v1/threads/thr_a with a workspace"

    def handle(request: httpx.Request) -> httpx.Response:
        error = {"code": "workspace_missing", "message": message}
        return httpx.Response(409, json={"error": error})

    with _client(handle) as kun, pytest.raises(UserMistake) as hinted:
        with explained("http://kun", token_given=False):
            kun.thread("thr_a")
    assert str(hinted.value) == (
        "thread thr_a has no workspace; kun run --thread thr_a --workspace DIR PROMPT "
        "(a folder on the server's machine) gives it one (HTTP 409, workspace_missing)"
    )
    assert hinted.value.suggests == ("run", "--thread", "thr_a", "--workspace", "DIR", "PROMPT")
