"""What the session importers share: timestamps, text, and the warnings for
what they could not read."""

from __future__ import annotations

from datetime import datetime

import msgspec

from kun.portable.builder import SessionBuilder

__all__ = ["UNKNOWN_RECORD", "epoch_ms", "text_of", "unknown", "unreadable"]

UNKNOWN_RECORD = "import_unknown_record"


def epoch_ms(value: object) -> int | None:
    """An ISO-8601 timestamp (``Z`` or an offset) as epoch milliseconds."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return int(parsed.timestamp() * 1000)


def text_of(content: object) -> str:
    """The text of a message's content: a string, or the ``text`` of each
    part of a list (parts without text are left out), joined by blank lines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            text_of(part.get("text", part.get("content")))
            for part in content
            if isinstance(part, dict)
        ]
        return "\n\n".join(part for part in parts if part)
    if content is None:
        return ""
    return msgspec.json.encode(content).decode()


def unknown(builder: SessionBuilder, kind: str) -> None:
    builder.warning(UNKNOWN_RECORD, f"record of kind {kind!r} not understood; not imported")


def unreadable(builder: SessionBuilder, line: int) -> None:
    builder.warning("import_unreadable_line", f"line {line} is not a JSON object; not imported")
