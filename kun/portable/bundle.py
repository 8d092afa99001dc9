"""``kun export``: one thread as one self-checking archive.

The bundle holds the log as stored (byte for byte, up to its last complete
line, so an export taken while a turn is writing is a clean prefix), every
side file, and a manifest with the size and SHA-256 of each (see
:mod:`kun.portable.manifest`). Snapshots, the index and the writer lock are
derived or local, so they stay behind: the importer rebuilds what it needs.

The log is copied (in chunks, to a scratch directory in the home, so memory
stays flat whatever its size) before the side files are listed: a side file
is durable before the event naming it is appended, so every side file the
exported log names is in the bundle. The log is replayed before anything is written, so
a bundle never carries a log kun cannot read. The archive is written to a
temporary name beside the target and renamed, so a failed export leaves no
half-file.
"""

from __future__ import annotations

import hashlib
import io
import os
import secrets
import tarfile
import tempfile
import time
from contextlib import suppress
from pathlib import Path

from kun import __version__
from kun.portable.errors import BundleRefused
from kun.portable.logcheck import check_log
from kun.portable.manifest import (
    BLOB_MEMBER,
    FORMAT,
    FORMAT_VERSION,
    LOG_MEMBER,
    MANIFEST_MEMBER,
    FileEntry,
    Manifest,
    encode_manifest,
)
from kun.store.errors import CorruptLog, ThreadNotFound
from kun.store.paths import BLOBS_NAME, LOG_NAME, thread_dir

__all__ = ["BUNDLE_SUFFIX", "default_bundle_name", "export_thread"]

BUNDLE_SUFFIX = ".kun.tar.gz"
_CHUNK = 1 << 20


def default_bundle_name(thread_id: str) -> str:
    return f"{thread_id}{BUNDLE_SUFFIX}"


def export_thread(home: Path, thread_id: str, out: Path, *, force: bool = False) -> Manifest:
    """Write ``thread_id``'s bundle to ``out`` (gzip-compressed unless the
    name ends in ``.tar``); refuses to overwrite ``out`` unless ``force``."""
    directory = thread_dir(home, thread_id)
    log = directory / LOG_NAME
    if not log.is_file():
        raise ThreadNotFound(thread_id)
    if out.exists() and not force:
        raise BundleRefused(out, "file exists (give --force to overwrite it)")
    with tempfile.TemporaryDirectory(prefix=".export-", dir=home) as scratch:
        copy = Path(scratch) / thread_id / LOG_NAME
        copy.parent.mkdir()
        log_entry = _copy_complete_lines(log, copy)
        try:
            facts = check_log(copy)
        except CorruptLog as exc:
            raise CorruptLog(log, exc.line, exc.last_good_seq, exc.reason) from None
        blobs = _side_files(directory / BLOBS_NAME)
        manifest = Manifest(
            format=FORMAT,
            format_version=FORMAT_VERSION,
            kun_version=__version__,
            thread_id=thread_id,
            events=facts.events,
            last_seq=facts.last_seq,
            exported_at=time.time_ns() // 1_000_000,
            files=(log_entry, *(_blob_entry(path) for path in blobs)),
        )
        _write_archive(out, manifest, copy, blobs)
    return manifest


def _copy_complete_lines(log: Path, copy: Path) -> FileEntry:
    """Copy the log up to its last newline (a line being written is not yet
    an event) as it is now, in chunks, and describe the copy."""
    digest = hashlib.sha256()
    size = 0
    with open(log, "rb") as source, open(copy, "w+b") as out:
        end = os.fstat(source.fileno()).st_size
        while size < end and (chunk := source.read(min(_CHUNK, end - size))):
            out.write(chunk)
            size += len(chunk)
        out.flush()
        keep = _last_newline(out.fileno(), size)
        out.truncate(keep)
    with open(copy, "rb") as kept:
        while chunk := kept.read(_CHUNK):
            digest.update(chunk)
    return FileEntry(path=LOG_MEMBER, size=keep, sha256=digest.hexdigest())


def _last_newline(fd: int, size: int) -> int:
    """The offset just after the last ``\n`` in the first ``size`` bytes."""
    end = size
    while end > 0:
        start = max(0, end - 4096)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def _side_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(
        p for p in directory.iterdir() if BLOB_MEMBER.fullmatch(f"blobs/{p.name}") and p.is_file()
    )


def _blob_entry(path: Path) -> FileEntry:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    sha256 = digest.hexdigest()
    if sha256 != path.name:
        raise BundleRefused(path, "side file does not match its name (altered); not exported")
    return FileEntry(path=f"blobs/{path.name}", size=size, sha256=sha256)


def _write_archive(out: Path, manifest: Manifest, log: Path, blobs: list[Path]) -> None:
    temp = out.with_name(f".{out.name}.{secrets.token_hex(4)}.tmp")
    mtime = manifest.exported_at // 1000
    try:
        plain = out.name.endswith(".tar")
        with tarfile.open(temp, "w") if plain else _gzip(temp) as tar:
            _add(tar, MANIFEST_MEMBER, encode_manifest(manifest), mtime)
            members = [(LOG_MEMBER, log), *((f"blobs/{path.name}", path) for path in blobs)]
            for name, path in members:
                with open(path, "rb") as file:
                    tar.addfile(_info(name, os.fstat(file.fileno()).st_size, mtime), file)
        with open(temp, "rb") as file:
            os.fsync(file.fileno())
        os.replace(temp, out)
    finally:
        with suppress(FileNotFoundError):
            temp.unlink()


def _gzip(path: Path) -> tarfile.TarFile:
    """gzip's own default level: tarfile's 9 takes four times as long for
    a tenth less on a log."""
    return tarfile.open(path, "w:gz", compresslevel=6)


def _add(tar: tarfile.TarFile, name: str, data: bytes, mtime: int) -> None:
    tar.addfile(_info(name, len(data), mtime), io.BytesIO(data))


def _info(name: str, size: int, mtime: int) -> tarfile.TarInfo:
    """A member owned by nobody in particular: a bundle says nothing about
    the machine it came from beyond the thread itself."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = mtime
    info.mode = 0o644
    return info
