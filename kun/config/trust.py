"""Which project ``kun.toml`` files the user has trusted (``kun trust``).

A ``kun.toml`` kun finds by itself in the project (the working directory or
a thread's workspace) may have been written by a sandboxed command or shipped
in a cloned repository. The keys that run programs, send credentials or widen
the sandbox count from such a file only once the user has read it and trusted
it, as ``direnv allow`` does: the record is the file's absolute path and the
SHA-256 of its bytes, so any change to the file un-trusts it.

The records live in ``<home>/trusted.json`` (mode 0600, replaced atomically).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

from kun.config.errors import ConfigError
from kun.tools.atomic import replace_file

__all__ = ["TRUST_FILE", "TrustRecord", "is_trusted", "revoke", "trust", "trusted_files"]

TRUST_FILE = "trusted.json"


class TrustRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One trusted file: its absolute path and the SHA-256 of its bytes."""

    path: str
    sha256: str


class _TrustFile(msgspec.Struct, frozen=True, kw_only=True):
    files: tuple[TrustRecord, ...] = ()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def trusted_files(home: Path) -> tuple[TrustRecord, ...]:
    """The records of ``home``; none when it has no trust file. A trust file
    kun cannot read is an error (trusting nothing silently would hide it)."""
    where = home / TRUST_FILE
    try:
        data = where.read_bytes()
    except FileNotFoundError:
        return ()
    except OSError as exc:
        raise ConfigError(str(where), "", f"cannot be read: {exc.strerror or exc}") from exc
    try:
        return msgspec.json.decode(data, type=_TrustFile).files
    except msgspec.DecodeError as exc:
        raise ConfigError(str(where), "", f"is not a trust file kun wrote: {exc}") from None


def is_trusted(home: Path, path: Path, data: bytes) -> bool:
    """Whether ``path``, holding ``data``, is trusted as it is now."""
    key, sha = str(path.resolve()), digest(data)
    return any(r.path == key and r.sha256 == sha for r in trusted_files(home))


def trust(home: Path, path: Path) -> TrustRecord:
    """Trust ``path`` with the bytes it holds now (replacing an older record)."""
    where = path.resolve()
    try:
        data = where.read_bytes()
    except OSError as exc:
        raise ConfigError(str(where), "", f"cannot be read: {exc.strerror or exc}") from exc
    record = TrustRecord(path=str(where), sha256=digest(data))
    kept = [r for r in trusted_files(home) if r.path != record.path]
    _write(home, (*kept, record))
    return record


def revoke(home: Path, path: Path) -> bool:
    """Forget ``path``; ``True`` if it was trusted."""
    key = str(path.resolve())
    records = trusted_files(home)
    kept = tuple(r for r in records if r.path != key)
    if len(kept) != len(records):
        _write(home, kept)
    return len(kept) != len(records)


def _write(home: Path, records: tuple[TrustRecord, ...]) -> None:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = msgspec.json.format(msgspec.json.encode(_TrustFile(files=records))) + b"\n"
    fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        replace_file(fd, TRUST_FILE, data)
        os.chmod(TRUST_FILE, 0o600, dir_fd=fd)
    finally:
        os.close(fd)
