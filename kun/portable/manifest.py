"""The manifest of a thread bundle: what it holds and how to check it.

A bundle is a tar archive (gzip-compressed by default) with exactly these
members, all regular files: ``manifest.json`` (first), ``events.jsonl`` (the
log as stored, byte for byte) and ``blobs/<sha256>`` (the thread's side
files). The manifest names every other member with its size and SHA-256; an
importer refuses a member it does not name, a member it names that is
missing, and any byte that does not match.
"""

from __future__ import annotations

import re
from typing import Final, Literal

import msgspec

__all__ = [
    "BLOB_MEMBER",
    "FORMAT",
    "FORMAT_VERSION",
    "LOG_MEMBER",
    "MANIFEST_MEMBER",
    "FileEntry",
    "Manifest",
    "decode_manifest",
    "encode_manifest",
]

FORMAT: Final = "kun-thread-bundle"
FORMAT_VERSION = 1
MANIFEST_MEMBER = "manifest.json"
LOG_MEMBER = "events.jsonl"
BLOB_MEMBER = re.compile(r"blobs/[0-9a-f]{64}")


class FileEntry(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    size: int
    sha256: str


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    """``events`` and ``last_seq`` describe the log as exported (an import
    checks them against its replay); ``exported_at`` is epoch milliseconds."""

    format: Literal["kun-thread-bundle"]
    format_version: int
    kun_version: str
    thread_id: str
    events: int
    last_seq: int
    exported_at: int
    files: tuple[FileEntry, ...]


_DECODER = msgspec.json.Decoder(Manifest)


def encode_manifest(manifest: Manifest) -> bytes:
    return msgspec.json.format(msgspec.json.encode(manifest), indent=2) + b"\n"


def decode_manifest(data: bytes) -> Manifest:
    """The manifest in ``data``; ``ValueError`` saying what is wrong."""
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError as exc:
        raise ValueError(f"{MANIFEST_MEMBER} is not a kun manifest ({exc})") from None
    except RecursionError:
        raise ValueError(f"{MANIFEST_MEMBER} is not a kun manifest (nested too deeply)") from None
