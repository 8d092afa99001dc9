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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import anyio
import msgspec

from kun.contracts import events as ev
from kun.contracts.items import BlobRef, Item, ToolResult
from kun.store.blobs import BlobStore

__all__ = [
    "HEAD_BYTES",
    "SIDE_FILE_THRESHOLD",
    "SideFiles",
    "copy_side_files",
    "head",
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
        self._resolved: dict[str, ToolResult] = {}
        self._texts: dict[str, str] = {}

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
        """``items`` with every side-filed output put back whole."""
        return [self._whole(item) for item in items]

    def _whole(self, item: Item) -> Item:
        if not isinstance(item, ToolResult) or item.output_ref is None:
            return item
        ref = item.output_ref
        whole = self._resolved.get(item.id)
        if whole is None or whole.output_ref != ref:
            text = self._texts.get(ref.sha256)
            if text is None:
                text = self.blobs.get(ref).decode("utf-8", "surrogatepass")
                self._texts[ref.sha256] = text
            whole = msgspec.structs.replace(item, output=text)
            self._resolved[item.id] = whole
        return whole


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
    """The side files ``event`` names: a big output, the content a file
    checkpoint saved, what a rewind's restore replaced. Whatever copies,
    bundles or collects side files asks this, so none is left behind."""
    if isinstance(event, _ITEM_EVENTS):
        item = event.item
        if isinstance(item, ToolResult):
            point = item.checkpoint
            saved = None if point is None else point.before
            return [ref for ref in (item.output_ref, saved) if ref is not None]
    elif isinstance(event, ev.ThreadRewound | ev.ThreadRewindUndone) and event.files is not None:
        return [p.before for p in event.files.restored if p.before is not None]
    elif isinstance(event, ev.FilesRestoreStarted):
        return [p.before for p in event.planned if p.before is not None]
    return []
