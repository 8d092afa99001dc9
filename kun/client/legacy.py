"""The dict-answering client the old ``--server`` commands still use, kept
until they speak :class:`kun.app.interface.Kun` (then it goes).

A Python client of kun's HTTP API (``kun serve``, :mod:`kun.server`),
sync (:class:`KunClient`) and async (:class:`AsyncKunClient`), over httpx.

Both speak through the same request descriptions (:class:`_Call`), so the
two cannot drift apart: each method says which request it sends and what
of the answer it returns. A refusal is an :class:`ApiError` carrying the
server's ``status``, ``code``, ``message`` and ``field``. Attachments are
given as local files and sent as base64 (the server never reads a client's
path). Waiting for a turn polls it; following its events live is the
event stream's job (``GET /v1/threads/{id}/events``).
"""

from __future__ import annotations

import base64
import mimetypes
import os
import re
import secrets
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx

from kun.errors import UserMistake

__all__ = ["ApiError", "AsyncKunClient", "KunClient", "refusal"]

SETTLED = frozenset({"completed", "failed", "aborted"})
DEFAULT_TIMEOUT = 30.0


class ApiError(UserMistake):
    """The server refused a request (or answered something that is not kun's)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(f"{message} (HTTP {status}, {code})")
        self.status = status
        self.code = code
        self.message = message
        self.field = field


@dataclass(frozen=True)
class _Call:
    method: str
    path: str
    json: Any = None
    params: Any = None
    returns: Literal["json", "text", "bytes"] = "json"


def _result(call: _Call, response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise refusal(response)
    if call.returns == "text":
        return response.text
    if call.returns == "bytes":
        return response.content
    try:
        return response.json()
    except ValueError:
        raise _not_kun(response) from None


def refusal(response: httpx.Response) -> ApiError:
    """The error a refused request carries: kun's JSON error, else one line
    saying the answer is not kun's (a proxy's page, another web server)."""
    try:
        error = response.json()["error"]
        return ApiError(response.status_code, error["code"], error["message"], error.get("field"))
    except (ValueError, KeyError, TypeError):
        return _not_kun(response)


_TITLE = re.compile(r"<title>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _not_kun(response: httpx.Response) -> ApiError:
    """An HTML page or other text would spill its lines into the one-line
    error; its title (or its first words) says enough."""
    kind = response.headers.get("content-type", "no content type").split(";")[0]
    try:
        text = response.text
    except httpx.ResponseNotRead:
        text = "a download without kun's X-Kun-Thread"
    title = _TITLE.search(text)
    words = " ".join((title.group(1) if title else text).split())
    return ApiError(
        response.status_code, "not_kun", f"the answer is not kun's ({kind}: {words[:80]!r})"
    )


def _upload(path: Path, data: bytes) -> dict[str, str]:
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return {"name": path.name, "mime_type": mime, "data": base64.b64encode(data).decode()}


def _given(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


_CHUNK = 1 << 20
_SLOW = httpx.Timeout(DEFAULT_TIMEOUT, read=None)
"""Export and import: the server writes or checks a whole bundle before it
answers, which takes as long as the bundle is large."""


def _import_params(
    path: Path, source: str, as_id: str | None, replace: bool = False
) -> dict[str, str]:
    return _given(name=path.name, replace="1" if replace else None, **{"from": source, "as": as_id})


def _chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            yield chunk


async def _async_chunks(path: Path) -> AsyncIterator[bytes]:
    async with await anyio.open_file(path, "rb") as file:
        while chunk := await file.read(_CHUNK):
            yield chunk


def _exported(response: httpx.Response) -> dict[str, Any]:
    headers = response.headers
    return {
        "thread_id": headers.get("x-kun-thread", ""),
        "events": int(headers.get("x-kun-events", "0")),
        "side_files": int(headers.get("x-kun-side-files", "0")),
    }


def _partial(out: Path) -> Path:
    """Where a download goes until it is whole (renamed onto ``out`` then)."""
    return out.with_name(f".{out.name}.{secrets.token_hex(4)}.part")


class _Calls:
    """The requests, described once for both clients."""

    @staticmethod
    def create_thread(settings: dict[str, Any]) -> _Call:
        return _Call("POST", "/v1/threads", json=settings)

    @staticmethod
    def threads(limit: int | None, cursor: str | None, include_hidden: bool) -> _Call:
        params = _given(limit=limit, cursor=cursor, all="true" if include_hidden else None)
        return _Call("GET", "/v1/threads", params=params)

    @staticmethod
    def thread(thread_id: str) -> _Call:
        return _Call("GET", f"/v1/threads/{thread_id}")

    @staticmethod
    def update_thread(thread_id: str, changes: dict[str, Any]) -> _Call:
        return _Call("PATCH", f"/v1/threads/{thread_id}", json=changes)

    @staticmethod
    def start_turn(
        thread_id: str,
        text: str,
        uploads: list[dict[str, str]],
        disable_user_input: bool,
        plan_mode: bool = False,
    ) -> _Call:
        body: dict[str, Any] = {"text": text}
        if uploads:
            body["attachments"] = uploads
        if disable_user_input:
            body["disable_user_input"] = True
        if plan_mode:
            body["plan_mode"] = True
        return _Call("POST", f"/v1/threads/{thread_id}/turns", json=body)

    @staticmethod
    def turn(thread_id: str, turn_id: str) -> _Call:
        return _Call("GET", f"/v1/threads/{thread_id}/turns/{turn_id}")

    @staticmethod
    def steer(thread_id: str, turn_id: str, text: str) -> _Call:
        return _Call("POST", f"/v1/threads/{thread_id}/turns/{turn_id}/steer", json={"text": text})

    @staticmethod
    def interrupt(thread_id: str, turn_id: str, discard: bool) -> _Call:
        path = f"/v1/threads/{thread_id}/turns/{turn_id}/interrupt"
        return _Call("POST", path, json={"discard": discard})

    @staticmethod
    def rewind(thread_id: str, before_turn: str | int, files: bool) -> _Call:
        path = f"/v1/threads/{thread_id}/rewind"
        return _Call("POST", path, json={"before_turn": str(before_turn), "files": files})

    @staticmethod
    def undo_rewind(thread_id: str) -> _Call:
        return _Call("POST", f"/v1/threads/{thread_id}/rewind/undo")

    @staticmethod
    def fork(thread_id: str, at_seq: int | None, at_turn: int | None) -> _Call:
        body = _given(at_seq=at_seq, at_turn=at_turn)
        return _Call("POST", f"/v1/threads/{thread_id}/fork", json=body)

    @staticmethod
    def compact(thread_id: str) -> _Call:
        return _Call("POST", f"/v1/threads/{thread_id}/compact")

    @staticmethod
    def answer_approval(approval_id: str, decision: str, reason: str | None) -> _Call:
        body = _given(decision=decision, reason=reason)
        return _Call("POST", f"/v1/approvals/{approval_id}", json=body)

    @staticmethod
    def answer_user_input(request_id: str, answer: str | None) -> _Call:
        return _Call("POST", f"/v1/user-inputs/{request_id}", json={"answer": answer})

    @staticmethod
    def usage(threads: Sequence[str]) -> _Call:
        return _Call("GET", "/v1/usage", params=[("thread", t) for t in threads])

    @staticmethod
    def transcript(thread_id: str, hidden: bool, reasoning: bool, until_seq: int | None) -> _Call:
        params = {"hidden": str(hidden).lower(), "reasoning": str(reasoning).lower()}
        if until_seq is not None:
            params["until_seq"] = str(until_seq)
        return _Call("GET", f"/v1/threads/{thread_id}/transcript", params=params, returns="text")

    @staticmethod
    def log(thread_id: str) -> _Call:
        return _Call("GET", f"/v1/threads/{thread_id}/log", returns="bytes")


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


class KunClient:
    """The API, blocking. ``with KunClient(url, token=...) as kun: ...``"""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url, headers=_headers(token), timeout=timeout, transport=transport
        )

    def __enter__(self) -> KunClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _do(self, call: _Call) -> Any:
        response = self._http.request(call.method, call.path, json=call.json, params=call.params)
        return _result(call, response)

    def create_thread(self, **settings: Any) -> str:
        """``workspace``, ``title``, ``provider``, ``model``,
        ``approval_policy``, ``reasoning_effort``, ``limits``."""
        thread_id: str = self._do(_Calls.create_thread(settings))["thread_id"]
        return thread_id

    def threads(
        self, *, limit: int | None = None, cursor: str | None = None, include_hidden: bool = False
    ) -> dict[str, Any]:
        result: dict[str, Any] = self._do(_Calls.threads(limit, cursor, include_hidden))
        return result

    def thread(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._do(_Calls.thread(thread_id))
        return result

    def update_thread(self, thread_id: str, **changes: Any) -> dict[str, Any]:
        result: dict[str, Any] = self._do(_Calls.update_thread(thread_id, changes))
        return result

    def start_turn(
        self,
        thread_id: str,
        text: str,
        *,
        attachments: Sequence[Path] = (),
        disable_user_input: bool = False,
        plan_mode: bool = False,
    ) -> str:
        """``disable_user_input``: the model may not ask questions (nobody
        is there to answer them). ``plan_mode``: a plan-mode turn."""
        uploads = [_upload(path, path.read_bytes()) for path in attachments]
        call = _Calls.start_turn(thread_id, text, uploads, disable_user_input, plan_mode)
        turn_id: str = self._do(call)["turn_id"]
        return turn_id

    def turn(self, thread_id: str, turn_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._do(_Calls.turn(thread_id, turn_id))
        return result

    def wait_turn(
        self, thread_id: str, turn_id: str, *, timeout: float | None = None, poll: float = 0.1
    ) -> dict[str, Any]:
        """The turn once it has settled (``TimeoutError`` after ``timeout``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            turn = self.turn(thread_id, turn_id)
            if turn["status"] in SETTLED:
                return turn
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"turn {turn_id} is still {turn['status']}")
            time.sleep(poll)

    def steer(self, thread_id: str, turn_id: str, text: str) -> None:
        self._do(_Calls.steer(thread_id, turn_id, text))

    def interrupt(self, thread_id: str, turn_id: str, *, discard: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = self._do(_Calls.interrupt(thread_id, turn_id, discard))
        return result

    def rewind(
        self, thread_id: str, before_turn: str | int, *, files: bool = False
    ) -> dict[str, Any]:
        """``files``: also put back the files kun's tools changed since."""
        result: dict[str, Any] = self._do(_Calls.rewind(thread_id, before_turn, files))
        return result

    def undo_rewind(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._do(_Calls.undo_rewind(thread_id))
        return result

    def fork(self, thread_id: str, *, at_seq: int | None = None, at_turn: int | None = None) -> str:
        new: str = self._do(_Calls.fork(thread_id, at_seq, at_turn))["thread_id"]
        return new

    def compact(self, thread_id: str) -> str | None:
        """Start compacting the history (a turn: wait for it with
        :meth:`wait_turn`); ``None`` when there is nothing to summarise yet."""
        turn_id: str | None = self._do(_Calls.compact(thread_id))["turn_id"]
        return turn_id

    def answer_approval(self, approval_id: str, decision: str, reason: str | None = None) -> None:
        self._do(_Calls.answer_approval(approval_id, decision, reason))

    def answer_user_input(self, request_id: str, answer: str | None) -> None:
        self._do(_Calls.answer_user_input(request_id, answer))

    def usage(self, *threads: str) -> dict[str, Any]:
        result: dict[str, Any] = self._do(_Calls.usage(threads))
        return result

    def transcript(
        self,
        thread_id: str,
        *,
        hidden: bool = False,
        reasoning: bool = False,
        until_seq: int | None = None,
    ) -> str:
        """``kun replay``'s text (of the events up to ``until_seq``)."""
        text: str = self._do(_Calls.transcript(thread_id, hidden, reasoning, until_seq))
        return text

    def log(self, thread_id: str) -> bytes:
        raw: bytes = self._do(_Calls.log(thread_id))
        return raw

    def export_thread(self, thread_id: str, out: Path, *, compress: bool = True) -> dict[str, Any]:
        """Download the thread's bundle to ``out`` (streamed; ``out``
        appears only once whole) and say what it holds: ``thread_id``,
        ``events``, ``side_files``."""
        params = None if compress else {"compress": "false"}
        part = _partial(out)
        try:
            with self._http.stream(
                "GET", f"/v1/threads/{thread_id}/export", params=params, timeout=_SLOW
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    _result(_Call("GET", ""), response)
                if "x-kun-thread" not in response.headers:
                    raise _not_kun(response)
                with open(part, "wb") as file:
                    for chunk in response.iter_bytes(_CHUNK):
                        file.write(chunk)
            os.replace(part, out)
        finally:
            part.unlink(missing_ok=True)
        return _exported(response)

    def import_thread(
        self, path: Path, *, source: str = "kun", as_id: str | None = None, replace: bool = False
    ) -> dict[str, Any]:
        """Upload ``path`` (streamed): a bundle, or with ``source`` a
        ``codex`` or ``claude-code`` session; ``as_id``: another id for its
        thread; ``replace``: import what changed since it was imported in
        place of its thread (which goes to the trash). Answers
        ``thread_id``, ``outcome``, ``events``, ``detail`` and ``trashed``."""
        response = self._http.post(
            "/v1/threads/import",
            params=_import_params(path, source, as_id, replace),
            content=_chunks(path),
            headers={"Content-Length": str(path.stat().st_size)},
            timeout=_SLOW,
        )
        result: dict[str, Any] = _result(_Call("POST", ""), response)
        return result


class AsyncKunClient:
    """The API, async. ``async with AsyncKunClient(url) as kun: ...``"""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_headers(token), timeout=timeout, transport=transport
        )

    async def __aenter__(self) -> AsyncKunClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _do(self, call: _Call) -> Any:
        response = await self._http.request(
            call.method, call.path, json=call.json, params=call.params
        )
        return _result(call, response)

    async def create_thread(self, **settings: Any) -> str:
        thread_id: str = (await self._do(_Calls.create_thread(settings)))["thread_id"]
        return thread_id

    async def threads(
        self, *, limit: int | None = None, cursor: str | None = None, include_hidden: bool = False
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._do(_Calls.threads(limit, cursor, include_hidden))
        return result

    async def thread(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._do(_Calls.thread(thread_id))
        return result

    async def update_thread(self, thread_id: str, **changes: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self._do(_Calls.update_thread(thread_id, changes))
        return result

    async def start_turn(
        self,
        thread_id: str,
        text: str,
        *,
        attachments: Sequence[Path] = (),
        disable_user_input: bool = False,
        plan_mode: bool = False,
    ) -> str:
        uploads = [_upload(path, await anyio.Path(path).read_bytes()) for path in attachments]
        call = _Calls.start_turn(thread_id, text, uploads, disable_user_input, plan_mode)
        turn_id: str = (await self._do(call))["turn_id"]
        return turn_id

    async def turn(self, thread_id: str, turn_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._do(_Calls.turn(thread_id, turn_id))
        return result

    async def wait_turn(self, thread_id: str, turn_id: str, *, poll: float = 0.1) -> dict[str, Any]:
        """The turn once it has settled (bound it with ``anyio.fail_after``)."""
        while True:
            turn = await self.turn(thread_id, turn_id)
            if turn["status"] in SETTLED:
                return turn
            await anyio.sleep(poll)

    async def steer(self, thread_id: str, turn_id: str, text: str) -> None:
        await self._do(_Calls.steer(thread_id, turn_id, text))

    async def interrupt(
        self, thread_id: str, turn_id: str, *, discard: bool = False
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._do(_Calls.interrupt(thread_id, turn_id, discard))
        return result

    async def rewind(
        self, thread_id: str, before_turn: str | int, *, files: bool = False
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self._do(_Calls.rewind(thread_id, before_turn, files))
        return result

    async def undo_rewind(self, thread_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._do(_Calls.undo_rewind(thread_id))
        return result

    async def fork(
        self, thread_id: str, *, at_seq: int | None = None, at_turn: int | None = None
    ) -> str:
        new: str = (await self._do(_Calls.fork(thread_id, at_seq, at_turn)))["thread_id"]
        return new

    async def compact(self, thread_id: str) -> str | None:
        """As :meth:`KunClient.compact`."""
        turn_id: str | None = (await self._do(_Calls.compact(thread_id)))["turn_id"]
        return turn_id

    async def answer_approval(
        self, approval_id: str, decision: str, reason: str | None = None
    ) -> None:
        await self._do(_Calls.answer_approval(approval_id, decision, reason))

    async def answer_user_input(self, request_id: str, answer: str | None) -> None:
        await self._do(_Calls.answer_user_input(request_id, answer))

    async def usage(self, *threads: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._do(_Calls.usage(threads))
        return result

    async def transcript(
        self,
        thread_id: str,
        *,
        hidden: bool = False,
        reasoning: bool = False,
        until_seq: int | None = None,
    ) -> str:
        call = _Calls.transcript(thread_id, hidden, reasoning, until_seq)
        text: str = await self._do(call)
        return text

    async def log(self, thread_id: str) -> bytes:
        raw: bytes = await self._do(_Calls.log(thread_id))
        return raw

    async def export_thread(
        self, thread_id: str, out: Path, *, compress: bool = True
    ) -> dict[str, Any]:
        """As :meth:`KunClient.export_thread`."""
        params = None if compress else {"compress": "false"}
        part = _partial(out)
        try:
            async with self._http.stream(
                "GET", f"/v1/threads/{thread_id}/export", params=params, timeout=_SLOW
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    _result(_Call("GET", ""), response)
                if "x-kun-thread" not in response.headers:
                    raise _not_kun(response)
                async with await anyio.open_file(part, "wb") as file:
                    async for chunk in response.aiter_bytes(_CHUNK):
                        await file.write(chunk)
            await anyio.Path(part).rename(out)
        finally:
            await anyio.Path(part).unlink(missing_ok=True)
        return _exported(response)

    async def import_thread(
        self, path: Path, *, source: str = "kun", as_id: str | None = None, replace: bool = False
    ) -> dict[str, Any]:
        """As :meth:`KunClient.import_thread`."""
        size = (await anyio.Path(path).stat()).st_size
        response = await self._http.post(
            "/v1/threads/import",
            params=_import_params(path, source, as_id, replace),
            content=_async_chunks(path),
            headers={"Content-Length": str(size)},
            timeout=_SLOW,
        )
        result: dict[str, Any] = _result(_Call("POST", ""), response)
        return result
