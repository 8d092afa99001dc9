"""``kun import FILE``: verify a bundle, then install its thread at once.

Refused, with the bundle and the member named: a file that is not a tar
archive; a member that is not a regular file or whose name is not one a
bundle has (``manifest.json``, ``events.jsonl``, ``blobs/<sha256>``), which
covers absolute names and ``..``; a member listed twice; a manifest from a
newer format; a member the manifest does not list or a listed one missing;
any size or SHA-256 that differs; a side file whose hash is not its name; a
log that does not replay or whose event count and last seq differ from the
manifest's. Nothing is written to the home before all of that passed.

The thread keeps its id unless ``as_id`` gives another
(:mod:`kun.portable.rethread`). If the id is taken (see
:mod:`kun.portable.reimport`): by the same log, or by what this bundle
imported there before and turns run in kun since, the import is a no-op
reported as already imported; by anything else, it is refused saying how
it differs (``--as`` imports a copy, ``--replace`` moves the thread there to
the trash and imports in its place).
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from kun.contracts.events import FilesRestoreStarted
from kun.portable.errors import BundleRefused
from kun.portable.install import mark_imported, staging_home
from kun.portable.logcheck import LogFacts, check_log
from kun.portable.manifest import (
    BLOB_MEMBER,
    FORMAT_VERSION,
    LOG_MEMBER,
    MANIFEST_MEMBER,
    Manifest,
    decode_manifest,
)
from kun.portable.reimport import ImportResult, Source, settle
from kun.portable.rethread import rethread_log
from kun.store.errors import CorruptLog, InvalidThreadId
from kun.store.paths import BLOBS_NAME, LOG_NAME, thread_dir, validate_thread_id

__all__ = ["ImportResult", "import_bundle"]

_CHUNK = 1 << 20
_RESTORING = (
    "a file restore was under way in it when it was exported (kun stopped in the middle); "
    "settle it in the home it was exported from (kun reconcile, with that home's --home "
    "if it is not the default) and export it again"
)
"""Not written out with the ``--home`` of the import (:func:`kun.cli.options.pasteable`):
that is the home the bundle goes to, where the thread never ran; the bundle
does not say which home it left."""
_MAX_MANIFEST = 1 << 24


def import_bundle(
    home: Path,
    path: Path,
    *,
    as_id: str | None = None,
    workspace: Path | None = None,
    replace_changed: bool = False,
) -> ImportResult:
    """Verify the bundle at ``path`` and install its thread in ``home``;
    ``workspace``: where its new turns run here (default: the path its log
    names, which may mean something else on this machine);
    ``replace_changed``: put it in place of a thread of that id that differs
    (which goes to the trash)."""
    wanted = validate_thread_id(as_id) if as_id is not None else None
    try:
        tar = tarfile.open(path, "r:*")
    except (tarfile.TarError, EOFError, OSError) as exc:
        if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError):
            raise
        raise BundleRefused(path, "not a kun bundle (not a tar archive)") from None
    with tar, staging_home(home) as stage:
        try:
            members = _members(path, tar, shutil.disk_usage(stage).free)
            manifest = _manifest(path, tar, members)
            source_id = _thread_id(path, manifest.thread_id)
            target_id = wanted or source_id
            staged = thread_dir(stage, source_id)
            _extract(path, tar, members, manifest, staged)
        except (tarfile.TarError, EOFError, OSError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise BundleRefused(path, f"unreadable archive ({reason})") from None
        if target_id != source_id:
            staged = _move(staged, thread_dir(stage, target_id), source_id, target_id)
        facts = _replay(path, staged / LOG_NAME)
        if (facts.events, facts.last_seq) != (manifest.events, manifest.last_seq):
            raise BundleRefused(
                path,
                f"{LOG_MEMBER} holds {facts.events} events up to seq {facts.last_seq}, "
                f"the manifest says {manifest.events} up to {manifest.last_seq}",
            )
        if facts.state is not None and isinstance(facts.state.restoring, FilesRestoreStarted):
            raise BundleRefused(path, _RESTORING)
        prefix = mark_imported(staged / LOG_NAME, target_id, facts.last_seq, workspace=workspace)
        imported = Source("bundle", facts.events, prefix, workspace=workspace)
        return settle(stage, home, target_id, imported, replace_changed=replace_changed)


def _members(path: Path, tar: tarfile.TarFile, room: int) -> dict[str, tarfile.TarInfo]:
    """The members, checked; read lazily so that a compressed bomb is refused
    as soon as its members outgrow ``room`` (the bytes free in the home),
    before it fills the disk or costs minutes of decompression."""
    members: dict[str, tarfile.TarInfo] = {}
    total = 0
    for member in tar:
        name = member.name
        total += member.size
        if total > room:
            raise BundleRefused(path, f"unpacks to more than the {room} bytes free in the home")
        if name.startswith("/") or ".." in PurePosixPath(name).parts:
            raise BundleRefused(path, f"member {name!r} points outside the bundle (refused)")
        if name not in (MANIFEST_MEMBER, LOG_MEMBER) and not BLOB_MEMBER.fullmatch(name):
            raise BundleRefused(path, f"unexpected member {name!r}")
        if not member.isreg():
            raise BundleRefused(path, f"member {name!r} is not a regular file")
        if name in members:
            raise BundleRefused(path, f"member {name!r} appears twice")
        members[name] = member
    return members


def _manifest(path: Path, tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo]) -> Manifest:
    member = members.get(MANIFEST_MEMBER)
    if member is None:
        raise BundleRefused(path, f"no {MANIFEST_MEMBER}: not a kun bundle")
    if member.size > _MAX_MANIFEST:
        raise BundleRefused(path, f"{MANIFEST_MEMBER} is too large")
    file = tar.extractfile(member)
    assert file is not None
    try:
        manifest = decode_manifest(file.read())
    except ValueError as exc:
        raise BundleRefused(path, str(exc)) from None
    if manifest.format_version > FORMAT_VERSION:
        raise BundleRefused(
            path, f"format version {manifest.format_version} is newer than this kun's"
        )
    listed = {entry.path for entry in manifest.files}
    if len(listed) != len(manifest.files) or LOG_MEMBER not in listed:
        raise BundleRefused(path, f"{MANIFEST_MEMBER} must list {LOG_MEMBER} and each file once")
    for name in sorted(set(members) - listed - {MANIFEST_MEMBER}):
        raise BundleRefused(path, f"unexpected member {name!r} (not in the manifest)")
    for name in sorted(listed - set(members)):
        raise BundleRefused(path, f"{name}: missing (the manifest lists it)")
    return manifest


def _thread_id(path: Path, thread_id: str) -> str:
    try:
        return validate_thread_id(thread_id)
    except InvalidThreadId as exc:
        raise BundleRefused(path, str(exc)) from None


def _extract(
    path: Path,
    tar: tarfile.TarFile,
    members: dict[str, tarfile.TarInfo],
    manifest: Manifest,
    staged: Path,
) -> None:
    (staged / BLOBS_NAME).mkdir(parents=True)
    for entry in manifest.files:
        member = members[entry.path]
        if member.size != entry.size:
            raise BundleRefused(
                path, f"{entry.path}: {member.size} bytes, the manifest says {entry.size} (altered)"
            )
        if entry.path != LOG_MEMBER and entry.path != f"blobs/{entry.sha256}":
            raise BundleRefused(path, f"{entry.path}: not named by its SHA-256 (altered)")
        source = tar.extractfile(member)
        assert source is not None
        target = staged / (LOG_NAME if entry.path == LOG_MEMBER else entry.path)
        digest = hashlib.sha256()
        with open(target, "wb") as out:
            while chunk := source.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != entry.sha256:
            raise BundleRefused(path, f"{entry.path}: SHA-256 differs from the manifest (altered)")


def _move(staged: Path, target: Path, source_id: str, target_id: str) -> Path:
    target.mkdir(parents=True)
    rethread_log(staged / LOG_NAME, target / LOG_NAME, source_id, target_id)
    (staged / BLOBS_NAME).rename(target / BLOBS_NAME)
    shutil.rmtree(staged)
    return target


def _replay(path: Path, log: Path) -> LogFacts:
    """Replay the staged log; an unknown kind (a newer kun's bundle) is a
    ``CorruptLog`` too."""
    try:
        return check_log(log)
    except CorruptLog as exc:
        raise BundleRefused(path, f"{LOG_MEMBER} does not replay: {exc}") from None
