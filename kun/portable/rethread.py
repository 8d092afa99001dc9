"""Giving a log another thread id (``kun import --as``).

Lines name their thread only where a writer put the id in: the store leaves
the envelope's ``thread_id`` out and its reader fills it in from the
directory (see :mod:`kun.store.codec`), so most lines move to another id by
moving the file. Older lines (and logs written by hand) carry it; on those
the envelope's key, always the first ``,"thread_id":`` of a line written by
msgspec (fields in declaration order), is cut out, and the cut line is
checked to decode to the same event under the new id. A line that does not
pass is re-encoded from its event instead. Lineage fields naming *other*
threads (``parent_thread_id``, ``source_thread_id``) are left alone.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from kun.store.codec import ENCODER, decode_line, encode_line

__all__ = ["rethread_log"]


class _Named(msgspec.Struct):
    thread_id: str = ""


_NAMED = msgspec.json.Decoder(_Named)


def rethread_log(source: Path, target: Path, old_id: str, new_id: str) -> None:
    """Write the log at ``source`` (thread ``old_id``) to ``target`` as
    thread ``new_id``'s; lines that name no thread are copied unchanged."""
    field = b',"thread_id":' + ENCODER.encode(old_id)
    with open(source, "rb") as lines, open(target, "wb") as out:
        for line in lines:
            out.write(_rethread(line, field, old_id, new_id))


def _rethread(line: bytes, field: bytes, old_id: str, new_id: str) -> bytes:
    body = line.rstrip(b"\n")
    if not body.strip() or not _NAMED.decode(body).thread_id:
        return line
    event = decode_line(body, old_id)
    wanted = msgspec.structs.replace(event, thread_id=new_id)
    start = body.find(field)
    if start >= 0:
        cut = body[:start] + body[start + len(field) :]
        try:
            if decode_line(cut, new_id) == wanted:
                return cut + b"\n"
        except Exception:  # any failure means: re-encode instead
            pass
    return encode_line(wanted)
