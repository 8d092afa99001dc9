"""Export and import over HTTP: ``GET /v1/threads/{id}/export`` answers the
thread's bundle, ``POST /v1/threads/import`` takes one (or a Codex or Claude
Code session) as the request body.

Both call the in-process adapter (:meth:`LocalKun.export_thread
<kun.app.local.LocalKun.export_thread>`, :meth:`~kun.app.local.LocalKun.import_thread`),
the same code as ``kun export`` and ``kun import`` (:mod:`kun.portable`), so a
bundle made by a server imports anywhere and the other way round, with the
same checks. A bundle can be large: it is
never held in memory. The export is written to a scratch directory in the
server's home, its name removed once open, and streamed in chunks; an import's
body is streamed to a scratch file in the home, checked against
:data:`MAX_IMPORT_BYTES` as it arrives (413 past it), then verified and
installed by :func:`~kun.portable.unbundle.import_bundle`. The bearer token
is the app's middleware's business, as for every route.

A refused bundle is 400 ``bundle_refused`` whose message is the reason
(which names the member: ``blobs/<sha256>``, ``events.jsonl``); the
client puts its own file's name in front. What was imported before and
changed since is 409 ``import_changed`` saying how (the records or events
it gained, the turns the thread ran here since); ``?replace=1`` moves the
thread to the trash and imports in its place (refused while the thread is
being written: its writer lock is taken first), ``?as=ID`` imports a copy.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import anyio
from anyio import AsyncFile
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from kun.app.interface import ImportSource
from kun.portable.bundle import default_bundle_name
from kun.portable.errors import BundleRefused, ImportChanged, ImportConflict, SourceRefused
from kun.portable.reimport import HTTP_HINT
from kun.server.errors import ApiError
from kun.server.threads import json_response, kun_of

__all__ = ["MAX_IMPORT_BYTES", "portable_routes"]

MAX_IMPORT_BYTES = 4 * 1024**3
_CHUNK = 1 << 20
_SOURCES: dict[str, ImportSource] = {"kun": "kun", "codex": "codex", "claude-code": "claude-code"}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NAME_MAX = 200
"""Characters of ``?name=`` kept for the scratch file (a file name may have 255 bytes)."""


async def export(request: Request) -> Response:
    """The bundle, gzip-compressed unless ``?compress=false`` (a plain tar);
    ``X-Kun-Events`` and ``X-Kun-Side-Files`` say what it holds."""
    kun = kun_of(request)
    plain = request.query_params.get("compress", "true").lower() in ("false", "0", "no")
    scratch = _scratch(kun.home, ".serve-export-")
    try:
        out = scratch / "bundle"
        exported = await kun.export_thread(
            request.path_params["thread_id"], out, compress=not plain
        )
        size = (await anyio.Path(out).stat()).st_size
        file = await anyio.open_file(out, "rb")
    finally:
        await anyio.to_thread.run_sync(partial(shutil.rmtree, scratch, ignore_errors=True))
    name = default_bundle_name(exported.thread_id)
    name = name.removesuffix(".gz") if plain else name
    headers = {
        "Content-Length": str(size),
        "Content-Disposition": f'attachment; filename="{name}"',
        "X-Kun-Thread": exported.thread_id,
        "X-Kun-Events": str(exported.events),
        "X-Kun-Side-Files": str(exported.side_files),
    }
    media = "application/x-tar" if plain else "application/gzip"
    return StreamingResponse(_chunks(file), headers=headers, media_type=media)


async def _chunks(file: AsyncFile[bytes]) -> AsyncIterator[bytes]:
    """The open bundle in chunks. Its name is already gone (removed before
    the answer starts), so nothing is left behind in the home whether the
    answer is sent whole or the client leaves halfway; the disk space goes
    when the file is closed."""
    async with file:
        while chunk := await file.read(_CHUNK):
            yield chunk


async def import_(request: Request) -> Response:
    """Import the body: ``?from=kun`` (a bundle, the default), ``codex`` or
    ``claude-code``; ``?as=ID`` gives a bundle another thread id; ``?name=``
    is the file's name (a Claude Code session without a session id is
    named after its file); ``?workspace=DIR`` (absolute, a directory on the
    server) is where the thread's new turns run. 201 when a thread was
    added, 200 when it was there already unchanged."""
    given = request.query_params.get("from", "kun")
    as_id = request.query_params.get("as") or None
    replace = _flag(request.query_params.get("replace"))
    source = _SOURCES.get(given)
    if source is None:
        raise ApiError(400, "invalid_source", f"from: one of {', '.join(sorted(_SOURCES))}", "from")
    if as_id is not None and replace:
        raise ApiError(
            400, "invalid_replace", "replace and as: give one (as imports beside it)", "replace"
        )
    workspace = _workspace(request.query_params.get("workspace"))
    _check_length(request)
    name = (
        _UNSAFE.sub("_", request.query_params.get("name", "")).lstrip(".")[:_NAME_MAX] or "upload"
    )
    kun = kun_of(request)
    scratch = _scratch(kun.home, ".serve-import-")
    try:
        body = scratch / name
        await _receive(request, body)
        with _refusals():
            done = await kun.import_thread(
                body, source=source, as_id=as_id, replace=replace, workspace=workspace
            )
    finally:
        await anyio.to_thread.run_sync(partial(shutil.rmtree, scratch, ignore_errors=True))
    return json_response(done, 200 if done.outcome == "already_imported" else 201)


def _flag(value: str | None) -> bool:
    """A yes/no query parameter: absent, ``0``, ``false`` or ``no`` is no."""
    if value is None:
        return False
    if value.lower() in ("", "0", "false", "no"):
        return False
    if value.lower() in ("1", "true", "yes"):
        return True
    raise ApiError(400, "invalid_replace", "replace: 1 or 0", "replace")


def _scratch(home: Path, prefix: str) -> Path:
    """A private directory in the home: on the threads' filesystem, so an
    import is installed by a rename, and hidden from the thread list."""
    home.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=home))


def _check_length(request: Request) -> None:
    length = request.headers.get("content-length")
    if length is not None and length.isdecimal() and int(length) > MAX_IMPORT_BYTES:
        raise _too_large()


def _too_large() -> ApiError:
    return ApiError(413, "too_large", f"the body is larger than {MAX_IMPORT_BYTES} bytes")


async def _receive(request: Request, path: Path) -> None:
    received = 0
    async with await anyio.open_file(path, "wb") as file:
        async for chunk in request.stream():
            received += len(chunk)
            if received > MAX_IMPORT_BYTES:
                raise _too_large()
            await file.write(chunk)


def _workspace(given: str | None) -> Path | None:
    """The ``workspace`` parameter as a directory, or ``None`` when not given."""
    if not given:
        return None
    path = Path(given)
    try:
        folder = path.is_absolute() and path.is_dir()
    except OSError:  # a name too long for the filesystem, a loop
        folder = False
    if not folder:
        raise ApiError(
            400, "invalid_workspace", "workspace: an absolute path to a directory", "workspace"
        )
    return path.resolve()


@contextmanager
def _refusals() -> Iterator[None]:
    """A refused bundle or session as the API says it: the reason alone
    (the client names its own file), and what changed since an import with
    the way to replace it here."""
    try:
        yield
    except BundleRefused as exc:
        raise ApiError(400, "bundle_refused", exc.reason) from None
    except SourceRefused as exc:
        raise ApiError(400, "source_refused", exc.reason) from None
    except ImportChanged as exc:
        message = f"thread {exc.thread_id}: {exc.reason}; {HTTP_HINT}"
        raise ApiError(409, "import_changed", message, "replace") from None
    except ImportConflict as exc:
        raise ApiError(409, "thread_exists", str(exc), "as") from None


def portable_routes() -> list[BaseRoute]:
    return [
        Route("/v1/threads/{thread_id}/export", export, methods=["GET"]),
        Route("/v1/threads/import", import_, methods=["POST"]),
    ]
