"""A turn's attachments sent as bytes (over HTTP, base64), written under
``<home>/uploads/<thread>/`` before the turn starts, so its
``user_message`` names a file kun owns; a client never names a path here.
Starting the turn keeps their bytes as side files of the thread
(``Attachment.ref``); a refused turn removes them again."""

from __future__ import annotations

import re
from pathlib import Path

import anyio

from kun.app.requests import Upload
from kun.contracts.items import Attachment
from kun.ids import new_id

__all__ = ["UPLOADS", "remove_uploads", "save_uploads"]

UPLOADS = "uploads"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


async def save_uploads(folder: Path, uploads: tuple[Upload, ...]) -> list[Attachment]:
    if not uploads:
        return []

    def write() -> list[Attachment]:
        folder.mkdir(parents=True, exist_ok=True)
        saved = []
        for upload in uploads:
            name = _UNSAFE.sub("_", upload.name).lstrip(".") or "attachment"
            path = folder / f"{new_id('att')}-{name}"
            path.write_bytes(upload.data)
            saved.append(
                Attachment(
                    name=upload.name,
                    mime_type=upload.mime_type,
                    path=str(path),
                    size_bytes=len(upload.data),
                )
            )
        return saved

    return await anyio.to_thread.run_sync(write)


async def remove_uploads(saved: list[Attachment]) -> None:
    for attachment in saved:
        if attachment.path is not None:
            await anyio.Path(attachment.path).unlink(missing_ok=True)
