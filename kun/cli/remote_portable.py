"""``kun --server URL export | import``: a thread's bundle out of, or into,
the home of a running ``kun serve`` (:mod:`kun.server.portable`).

Both print what the local commands print, so a script cannot tell where
the thread is held. The bundle is streamed both ways, never held whole in
memory; a download lands under a temporary name and is renamed onto the
output only once complete. A refusal reads as the local one: a tampered
bundle names this machine's file and the member that failed, a thread id
already taken says to give ``--as``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kun.cli.remote import Remote, explained
from kun.domain.transcript import plural

__all__ = ["remote_export", "remote_import"]


def remote_export(remote: Remote, thread: str, out: Path | None, *, force: bool) -> str:
    """Download ``thread``'s bundle; the line the local export prints."""
    from kun.portable.bundle import default_bundle_name
    from kun.portable.errors import BundleRefused

    target = out if out is not None else Path(default_bundle_name(thread))
    if target.exists() and not force:
        raise BundleRefused(target, "file exists (give --force to overwrite it)")
    with explained(remote), remote.client() as client:
        facts = client.export_thread(thread, target, compress=not target.name.endswith(".tar"))
    return (
        f"exported {facts['thread_id']} ({plural(facts['events'], 'event')}, "
        f"{plural(facts['side_files'], 'side file')}) to {target}"
    )


def remote_import(
    remote: Remote, file: Path, source: str, as_id: str | None, *, replace: bool = False
) -> dict[str, Any]:
    """Upload ``file`` and answer the server's ``thread_id``, ``outcome``,
    ``events``, ``detail`` and ``trashed``."""
    from kun.client.legacy import ApiError
    from kun.portable.errors import BundleRefused, SourceRefused

    try:
        with explained(remote), remote.client() as client:
            answer: dict[str, Any] = client.import_thread(
                file, source=source, as_id=as_id, replace=replace
            )
            result = {key: answer[key] for key in ("thread_id", "outcome", "events")}
            result.update({key: answer.get(key) for key in ("detail", "trashed")})
    except ApiError as exc:
        if exc.code == "bundle_refused":
            raise BundleRefused(file, exc.message) from None
        if exc.code == "source_refused":
            raise SourceRefused(file, exc.message) from None
        if exc.code == "import_changed":
            from kun.portable.reimport import CHANGED_HINT, HTTP_HINT

            raise click.ClickException(exc.message.replace(HTTP_HINT, CHANGED_HINT)) from None
        if exc.code == "thread_exists":
            raise click.ClickException(exc.message) from None
        raise
    return result
