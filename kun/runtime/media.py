"""A request too large for a reason other than its context (issue 12, item 1):
the provider refused the body (HTTP 413, ``request_too_large``), and what
makes a body that large while its prompt fits the window is media.

The loop sends such a step once more without any attachment (the user's
and the tools' images and files) and records a ``attachments_dropped``
warning naming them. All of them go, not the largest first: the provider
does not say which one was too large, and the one resend the loop allows
should be the one most likely to fit. Once dropped, they stay out of the
turn's later steps (:func:`still_without_media`, read from the recorded
warning, so a replay tells why), or every step would be refused first. The
log keeps the attachments: the next turn tries them again. A request
without attachments, or a resend refused again, fails the turn as the
provider's error.
"""

from __future__ import annotations

import msgspec

from kun.contracts import events as ev
from kun.contracts.items import Attachment, Item, ToolResult, UserMessage, WarningItem
from kun.contracts.model import ModelRequest
from kun.runtime.context import TurnRun, draft

__all__ = [
    "ATTACHMENTS_DROPPED",
    "REQUEST_TOO_LARGE",
    "drop_attachments",
    "still_without_media",
    "without_attachments",
]

REQUEST_TOO_LARGE = "request_too_large"
"""The code :mod:`kun.model.errors` gives a body the provider refused as too
large (413)."""

ATTACHMENTS_DROPPED = "attachments_dropped"


def without_attachments(request: ModelRequest) -> tuple[ModelRequest, list[Attachment]]:
    """``request`` with no attachment anywhere, and the attachments it had
    (in request order)."""
    dropped: list[Attachment] = []
    history = tuple(_bare(item, dropped) for item in request.history)
    prefix = tuple(_bare(item, dropped) for item in request.prefix)
    dropped.extend(request.attachments)
    bare = msgspec.structs.replace(request, history=history, prefix=prefix, attachments=())
    return bare, dropped


def still_without_media(run: TurnRun, request: ModelRequest) -> ModelRequest:
    """``request`` without attachments when this turn already had to drop
    them, else unchanged."""
    turn = next((t for t in run.state().turns if t.turn_id == run.turn_id), None)
    if turn is None or not any(
        isinstance(i, WarningItem) and i.code == ATTACHMENTS_DROPPED for i in turn.items
    ):
        return request
    return without_attachments(request)[0]


def _bare(item: Item, dropped: list[Attachment]) -> Item:
    if isinstance(item, (UserMessage, ToolResult)) and item.attachments:
        dropped.extend(item.attachments)
        return msgspec.structs.replace(item, attachments=())
    return item


async def drop_attachments(run: TurnRun, request: ModelRequest, detail: str) -> ModelRequest | None:
    """The request to send again after the provider refused ``request`` as
    too large (``detail`` is its message), with the warning recorded; ``None``
    when it carried no attachment, so there is nothing to drop."""
    bare, dropped = without_attachments(request)
    if not dropped:
        return None
    names = ", ".join(_describe(a) for a in dropped)
    count = f"{len(dropped)} attachment{'s' if len(dropped) != 1 else ''}"
    await run.write(
        draft(
            ev.WarningEvent,
            run.turn_id,
            code=ATTACHMENTS_DROPPED,
            message=f"The request was too large for the provider ({detail}); "
            f"it was sent again without its {count}: {names}.",
        )
    )
    return bare


def _describe(attachment: Attachment) -> str:
    where = attachment.path or attachment.name
    if attachment.size_bytes is None:
        return where
    return f"{where} ({attachment.size_bytes} bytes)"
