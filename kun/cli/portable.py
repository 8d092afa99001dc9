"""``kun export`` and ``kun import``: threads in and out of a home (or,
with ``--server URL``, the home of a running ``kun serve``:
:mod:`kun.cli.remote_portable`).

Only click is imported at module level; the work lives in
:mod:`kun.portable`, imported when a command runs.
"""

from __future__ import annotations

from pathlib import Path

import click

from kun.cli.options import home_option, pasteable, written_out
from kun.cli.remote import local_only, remote_target
from kun.domain.transcript import plural
from kun.ids import new_id

__all__ = ["export_command", "import_command"]


@click.command("export")
@click.argument("thread")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Bundle to write (default: ./<thread-id>.kun.tar.gz; a .tar name is not compressed).",
)
@click.option("--force", is_flag=True, help="Overwrite the output file if it exists.")
@home_option
def export_command(thread: str, output: Path | None, force: bool, home: Path | None) -> None:
    """Write THREAD (an id or a unique prefix) as one bundle: its log byte for
    byte, its side files and a manifest with the SHA-256 of each."""
    if output is not None and not output.absolute().parent.is_dir():
        raise click.BadParameter(
            f"{output}: there is no folder {output.absolute().parent}", param_hint="'-o'"
        )
    remote = remote_target()
    if remote is not None:
        from kun.cli.remote_portable import remote_export

        local_only(home=home)
        click.echo(remote_export(remote, thread, output, force=force))
        return
    from kun.app.lookup import resolve_thread_id
    from kun.portable.bundle import default_bundle_name, export_thread
    from kun.store.paths import resolve_home

    root = resolve_home(home)
    thread_id = resolve_thread_id(root, thread)
    out = output if output is not None else Path(default_bundle_name(thread_id))
    manifest = export_thread(root, thread_id, out, force=force)
    blobs = len(manifest.files) - 1
    events = plural(manifest.events, "event")
    click.echo(f"exported {thread_id} ({events}, {plural(blobs, 'side file')}) to {out}")


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--from",
    "source",
    type=click.Choice(["kun", "codex", "claude-code"]),
    default="kun",
    help="What FILE is: a kun bundle (default), a Codex CLI rollout or a Claude Code session.",
)
@click.option(
    "--as",
    "as_id",
    default=None,
    help="Import under this thread id (beside the thread it finds).",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Import again what changed since it was imported; the thread as it is goes to the trash.",
)
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, exists=True, resolve_path=True, path_type=Path),
    default=None,
    help="Run the thread's new turns in this directory here, not the one its log names.",
)
@home_option
def import_command(
    file: Path,
    source: str,
    as_id: str | None,
    replace: bool,
    workspace: Path | None,
    home: Path | None,
) -> None:
    """Add the thread in FILE to the home and print its id.

    A bundle is verified (every size and SHA-256) before anything is
    written. A Codex or Claude Code session gets a thread id derived from its
    session id, so importing it again finds its thread instead of making a
    copy. Importing again what is already there (turns run in kun since
    aside) changes nothing; what changed since is refused, saying how:
    --replace moves the thread as it is to the trash (kun restore brings it
    back) and imports in its place, --as NEW_ID imports beside it. What the
    imported turns changed in files is never restored here (kun rewind
    --files reports it); --workspace rebinds the thread's workspace.
    """
    from kun.store.paths import resolve_home

    if replace and as_id is not None:
        raise click.UsageError("--replace and --as: give one (--as imports beside the thread)")
    remote = remote_target()
    if remote is not None:
        from kun.cli.remote_portable import remote_import

        local_only(home=home, workspace=workspace)
        answer = remote_import(remote, file, source, as_id, replace=replace)
        trashed = answer.get("trashed")
        _imported(
            answer["thread_id"],
            answer["outcome"],
            answer["events"],
            str(answer.get("detail") or ""),
            None if trashed is None else str(trashed),
        )
        return
    root = resolve_home(home)
    if source == "kun":
        from kun.portable.unbundle import import_bundle

        result = import_bundle(
            root, file, as_id=as_id, workspace=workspace, replace_changed=replace
        )
    else:
        from kun.portable.sessions import import_session

        result = import_session(
            root, file, source, replace_changed=replace, workspace=workspace, as_id=as_id
        )
    trashed = None if result.trashed is None else result.trashed.name
    detail = written_out(result.detail, *result.suggests)
    _imported(result.thread_id, result.outcome, result.events, detail, trashed, local=True)


def _imported(
    thread_id: str,
    outcome: str,
    events: int,
    detail: str,
    trashed: str | None,
    *,
    local: bool = False,
) -> None:
    """What happened on stderr, the thread id alone on stdout (for scripts);
    ``trashed``: the trash entry of a replaced thread, brought back by a
    ``kun restore`` with the ``--home`` of a ``local`` import (``kun
    restore`` does not go through a server: on its machine otherwise)."""
    if outcome == "already_imported":
        click.echo(f"already imported: {thread_id} ({detail or 'unchanged'})", err=True)
    else:
        click.echo(f"{outcome} {thread_id} ({plural(events, 'event')})", err=True)
        if detail:
            click.echo(detail, err=True)
    if trashed is not None:
        restore = ("restore", trashed.removeprefix("trash/"), "--as", new_id("thr"))
        command = pasteable(*restore) if local else " ".join(("kun", *restore))
        where = "" if local else ", run on the server's machine with its --home"
        click.echo(
            f"the thread as it was is in the trash: {command} brings it back beside this one"
            f"{where}",
            err=True,
        )
    click.echo(thread_id)
