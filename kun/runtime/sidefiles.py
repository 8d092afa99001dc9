"""Big tool outputs go to side files; requests get them back whole.

A tool output over :data:`SIDE_FILE_THRESHOLD` bytes (UTF-8) is stored once
in the thread's side files (:mod:`kun.store.blobs`) *before* the result that
names it is recorded, and the ``tool_result`` keeps only a head of it for
people (``output``, :data:`HEAD_BYTES`) and the reference (``output_ref``):
the log, the live view, snapshots and ``kun replay`` stay small, and nothing
reads the side file until a request needs it.

:meth:`SideFiles.resolve` puts the whole output back into the items a
request is built from, checked against its hash, so the model is sent
exactly what the tool returned, as before side files. It runs on the event
loop when a step's request is built (a read and a hash, ~1 ms per MB) and
remembers what it resolved for the rest of the turn, so a turn reads each
side file once however many steps and results name it. A side file that is missing or altered raises
:class:`~kun.store.blobs.BlobError` naming it, and the turn fails with
``side_file_unreadable`` rather than send the model something else.

Attachments are side files too, whatever their size: an image or file is
part of what the thread sent, so :func:`keep_attachments` stores its bytes
before the message or result naming it is recorded and gives it a ``ref``,
and :meth:`SideFiles.resolve` hands the request those bytes (as
:class:`~kun.model.request.images.HeldAttachment`, checked against the
hash) instead of whatever the file at ``path`` holds by then. A thread
moved to another home (``kun export``/``kun import``), forked or collected
by ``kun gc`` keeps them like any side file (:func:`side_file_refs`). An
attachment without ``ref`` (recorded before this, or unreadable when
recorded) is read from its path, as it always was.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import anyio
import msgspec

from kun.contracts import events as ev
from kun.contracts.items import Attachment, BlobRef, Item, ToolResult, UserMessage
from kun.store.blobs import BlobStore

__all__ = [
    "HEAD_BYTES",
    "SIDE_FILE_THRESHOLD",
    "SideFiles",
    "copy_side_files",
    "head",
    "keep_attachments",
    "side_file_refs",
]

SIDE_FILE_THRESHOLD = 64 * 1024
"""Outputs longer than this many UTF-8 bytes go to a side file."""

HEAD_BYTES = 2 * 1024
"""How much of such an output the log line keeps, for people."""

_ITEM_EVENTS = (ev.ItemCreated, ev.ItemUpdated, ev.ItemCompleted)


def head(text: str, limit: int = HEAD_BYTES) -> str:
    """The first ``limit`` bytes of ``text``, cut at a character boundary."""
    return text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


class SideFiles:
    """One thread's side files as a turn uses them. ``threshold`` defaults to
    :data:`SIDE_FILE_THRESHOLD` as it is when the object is made."""

    def __init__(self, blobs: BlobStore, threshold: int | None = None) -> None:
        self.blobs = blobs
        self.threshold = SIDE_FILE_THRESHOLD if threshold is None else threshold
        self._resolved: dict[str, tuple[Item, Item]] = {}
        self._texts: dict[str, str] = {}
        self._data: dict[str, bytes] = {}

    async def spill(self, output: str) -> tuple[str, BlobRef | None]:
        """``output`` as the log should hold it: itself when small, else its
        head and the reference of the side file now holding all of it. A
        side file that cannot be written leaves the output in the log: a
        bigger line beats a lost result."""
        data = output.encode("utf-8", "surrogatepass")
        if len(data) <= self.threshold:
            return output, None
        try:
            ref = await anyio.to_thread.run_sync(self.blobs.put, data)
        except OSError:
            return output, None
        return head(output), ref

    def resolve(self, items: Sequence[Item]) -> list[Item]:
        """``items`` with every side-filed output put back whole and every
        attachment with a ``ref`` holding its side file's bytes."""
        return [self._whole(item) for item in items]

    def _whole(self, item: Item) -> Item:
        if not isinstance(item, ToolResult | UserMessage) or not _names_side_files(item):
            return item
        cached = self._resolved.get(item.id)
        if cached is not None and cached[0] == item:
            return cached[1]
        whole: ToolResult | UserMessage = item
        if isinstance(item, ToolResult) and item.output_ref is not None:
            whole = msgspec.structs.replace(item, output=self._text(item.output_ref))
        if any(a.ref is not None for a in item.attachments):
            held = tuple(self._held(a) for a in item.attachments)
            whole = msgspec.structs.replace(whole, attachments=held)
        self._resolved[item.id] = (item, whole)
        return whole

    def _text(self, ref: BlobRef) -> str:
        text = self._texts.get(ref.sha256)
        if text is None:
            text = self.blobs.get(ref).decode("utf-8", "surrogatepass")
            self._texts[ref.sha256] = text
        return text

    def _held(self, attachment: Attachment) -> Attachment:
        if attachment.ref is None:
            return attachment
        from kun.model.request.images import HeldAttachment  # the model layer: only for a turn

        fields = msgspec.structs.asdict(attachment)
        return HeldAttachment(**fields, data=self._bytes(attachment.ref))

    def _bytes(self, ref: BlobRef) -> bytes:
        data = self._data.get(ref.sha256)
        if data is None:
            data = self.blobs.get(ref)
            self._data[ref.sha256] = data
        return data


async def keep_attachments(
    blobs: BlobStore, attachments: Sequence[Attachment]
) -> tuple[Attachment, ...]:
    """``attachments`` as the log should hold them: each with the ``ref`` of
    the side file now holding its bytes (durable when this returns, so the
    event naming it can follow). One that already has a ``ref``, has no
    path, or cannot be read or stored is left as it is, to be read from its
    path when a request is built, as before side files held attachments:
    whether a file that cannot be read may be attached is the caller's
    rule (:mod:`kun.runtime.turn_input`), not this one's."""
    if not any(a.ref is None and a.path is not None for a in attachments):
        return tuple(attachments)
    return await anyio.to_thread.run_sync(_keep_all, blobs, tuple(attachments))


def _keep_all(blobs: BlobStore, attachments: tuple[Attachment, ...]) -> tuple[Attachment, ...]:
    return tuple(_keep(blobs, a) for a in attachments)


def _keep(blobs: BlobStore, attachment: Attachment) -> Attachment:
    if attachment.ref is not None or attachment.path is None:
        return attachment
    try:
        ref = blobs.put(Path(attachment.path).read_bytes())
    except OSError:
        return attachment
    return msgspec.structs.replace(attachment, ref=ref, size_bytes=ref.size)


def _names_side_files(item: ToolResult | UserMessage) -> bool:
    if isinstance(item, ToolResult) and item.output_ref is not None:
        return True
    return any(a.ref is not None for a in item.attachments)


def copy_side_files(events: Iterable[ev.Event], source: BlobStore, target: BlobStore) -> int:
    """Copy into ``target`` every side file ``events`` name (a fork's log
    must not depend on its source's directory); returns how many. Raises
    :class:`~kun.store.blobs.BlobError` if one is missing or altered."""
    copied = 0
    for event in events:
        for ref in side_file_refs(event):
            target.put(source.get(ref))
            copied += 1
    return copied


def side_file_refs(event: ev.Event) -> list[BlobRef]:
    """The side files ``event`` names: a big output, an attachment, the
    content a file checkpoint saved, what a rewind's restore replaced. Whatever copies,
    bundles or collects side files asks this, so none is left behind."""
    if isinstance(event, _ITEM_EVENTS):
        item = event.item
        if isinstance(item, ToolResult):
            point = item.checkpoint
            saved = None if point is None else point.before
            refs = [ref for ref in (item.output_ref, saved) if ref is not None]
            return refs + [a.ref for a in item.attachments if a.ref is not None]
        if isinstance(item, UserMessage):
            return [a.ref for a in item.attachments if a.ref is not None]
    elif isinstance(event, ev.ThreadRewound | ev.ThreadRewindUndone) and event.files is not None:
        return [p.before for p in event.files.restored if p.before is not None]
    elif isinstance(event, ev.FilesRestoreStarted):
        return [p.before for p in event.planned if p.before is not None]
    return []
