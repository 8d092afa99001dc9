"""What a turn may start from, checked once, at the surface.

A blank prompt is dropped by history repair (the model never sees it), so a
first turn would send no message at all and a later one would end the body
on the model's previous answer, which Anthropic reads as a prefill and
refuses when it ends in whitespace. An attachment that is not an image goes
to the model as base64 text, bounded by
:data:`~kun.model.request.images.DEFAULT_FALLBACK_LIMIT`; one over it would
be refused on every later request of the thread. Both are refused here,
when the user gives them, with a :class:`~kun.errors.UserMistake` the CLI
prints as one line; nothing is recorded.

An image is accepted whatever its size: a model that takes images gets it;
a text-only model (the thread may move to one later) gets a note saying it
was not sent. An attachment that cannot be read is left to the request,
which says so to the model.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from kun.contracts.items import Attachment
from kun.model.errors import AttachmentTooLarge
from kun.model.request.images import DEFAULT_FALLBACK_LIMIT, sniff_image_type
from kun.runtime.errors import BlankPrompt

__all__ = ["check_prompt", "check_steering"]

_SNIFF_BYTES = 16


def check_prompt(text: str, attachments: Sequence[Attachment] = ()) -> None:
    """Raise if a turn cannot start from ``text`` and ``attachments``."""
    if not text.strip() and not attachments:
        raise BlankPrompt()
    for attachment in attachments:
        _check_attachment(attachment)


def check_steering(text: str) -> None:
    """Raise if ``text`` is no steering message."""
    if not text.strip():
        raise BlankPrompt("steering message")


def _check_attachment(attachment: Attachment) -> None:
    if attachment.path is None:
        return
    try:
        with open(attachment.path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            head = file.read(_SNIFF_BYTES)
    except OSError:
        return
    if size > DEFAULT_FALLBACK_LIMIT and sniff_image_type(head) is None:
        raise AttachmentTooLarge(
            f"attachment {attachment.name!r} is {size} bytes; a file that is not an image "
            f"is sent as base64 text, which is limited to {DEFAULT_FALLBACK_LIMIT} bytes. "
            "Attach a smaller file or an excerpt"
        )
