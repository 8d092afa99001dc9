"""What both clients do with httpx's requests and answers: the headers,
the body, and the answer decoded straight into its Struct."""

from __future__ import annotations

import mimetypes
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import msgspec

from kun.app.answers import Exported
from kun.app.requests import Upload
from kun.client.errors import not_kun, refusal
from kun.client.routes import Call

if TYPE_CHECKING:
    import httpx

__all__ = [
    "CHUNK",
    "DEFAULT_TIMEOUT",
    "SETTLED",
    "answer",
    "compressed",
    "export_refused",
    "exported",
    "headers",
    "partial",
    "request_args",
    "upload",
]

T = TypeVar("T")

SETTLED = frozenset({"completed", "failed", "aborted"})
DEFAULT_TIMEOUT = 30.0
CHUNK = 1 << 20


def headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def request_args(call: Call[Any]) -> dict[str, Any]:
    """``httpx``'s arguments for the call (its body as kun's JSON)."""
    args: dict[str, Any] = {"params": call.params}
    if call.body is not None:
        args["content"] = msgspec.json.encode(call.body)
        args["headers"] = {"Content-Type": "application/json"}
    return args


def answer(call: Call[T], response: httpx.Response) -> T:
    """The answer as the route's type, or the refusal raised."""
    if response.status_code >= 400:
        raise refusal(response)
    kind: Any = call.route.answer
    if kind is str:
        return cast(T, response.text)
    if kind is bytes:
        return cast(T, response.content)
    try:
        return cast(T, msgspec.json.decode(response.content, type=kind))
    except msgspec.ValidationError as exc:
        raise not_kun(response, f"not a {kind.__name__}: {exc}") from None
    except msgspec.DecodeError:
        raise not_kun(response) from None


def upload(path: Path, data: bytes) -> Upload:
    """An attachment for :class:`~kun.app.requests.StartTurn`: the file's
    bytes (sent as base64; the server never reads a client's path)."""
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return Upload(name=path.name, mime_type=mime, data=data)


def exported(response: httpx.Response) -> Exported:
    """What an export holds, from its headers."""
    found = response.headers
    return Exported(
        thread_id=found.get("x-kun-thread", ""),
        events=int(found.get("x-kun-events", "0")),
        side_files=int(found.get("x-kun-side-files", "0")),
    )


def partial(out: Path) -> Path:
    """Where a download goes until it is whole (renamed onto ``out`` then)."""
    return out.with_name(f".{out.name}.{secrets.token_hex(4)}.part")


def export_refused(out: Path, force: bool) -> None:
    """An ``out`` that exists is refused unless ``force``, as the in-process
    adapter refuses it."""
    if out.exists() and not force:
        from kun.portable.errors import BundleRefused

        raise BundleRefused(out, "file exists (give --force to overwrite it)")


def compressed(out: Path, compress: bool) -> bool:
    """A name ending in ``.tar`` is a plain tar, whatever ``compress`` says."""
    return compress and not out.name.endswith(".tar")
