"""Export and import for the in-process adapter: a thread's bundle written
to a file here, a bundle or another tool's session installed into the home
(:mod:`kun.portable`, as ``kun export`` and ``kun import`` do). Blocking;
the adapter runs them off the event loop."""

from __future__ import annotations

import os
from pathlib import Path

from kun.app.answers import Exported, ImportDone
from kun.app.interface import ImportSource
from kun.ids import new_id

__all__ = ["install", "write_bundle"]


def write_bundle(home: Path, thread_id: str, out: Path, *, compress: bool, force: bool) -> Exported:
    """Write the thread's bundle to ``out``; an ``out`` that exists is
    refused unless ``force``. A name ending in ``.tar`` is a plain tar
    whatever ``compress`` says (the name says what the file is); a plain
    tar under another name is written beside it and renamed once whole."""
    from kun.portable.bundle import export_thread
    from kun.portable.errors import BundleRefused

    if out.exists() and not force:
        raise BundleRefused(out, "file exists (give --force to overwrite it)")
    target = out
    if not compress and not out.name.endswith(".tar"):
        target = out.with_name(f".{out.name}.{new_id('part')}.tar")
    try:
        manifest = export_thread(home, thread_id, target, force=force)
        if target != out:
            os.replace(target, out)
    finally:
        if target != out:
            target.unlink(missing_ok=True)
    return Exported(thread_id=thread_id, events=manifest.events, side_files=len(manifest.files) - 1)


def install(
    home: Path,
    path: Path,
    *,
    source: ImportSource,
    as_id: str | None,
    replace: bool,
    workspace: Path | None,
) -> ImportDone:
    """Import ``path`` (a bundle, or a ``codex`` or ``claude-code``
    session); ``trashed``: where a replaced thread went, relative to the home."""
    from kun.portable.sessions import import_session
    from kun.portable.unbundle import import_bundle

    if source == "kun":
        result = import_bundle(
            home, path, as_id=as_id, workspace=workspace, replace_changed=replace
        )
    else:
        result = import_session(
            home, path, source, replace_changed=replace, workspace=workspace, as_id=as_id
        )
    trashed = result.trashed
    return ImportDone(
        thread_id=result.thread_id,
        outcome=result.outcome,
        events=result.events,
        detail=result.detail,
        trashed=None if trashed is None else trashed.relative_to(home).as_posix(),
    )
