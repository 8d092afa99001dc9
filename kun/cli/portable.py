"""``kun export`` and ``kun import``: threads in and out of a home (or,
with ``--server URL``, the home of a running ``kun serve``), through
:class:`~kun.app.interface.Kun`. The bundle is written to this machine's
file either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from kun.cli.options import home_option, pasteable, store_option, written_out
from kun.cli.reading import on_kun
from kun.domain.transcript import plural
from kun.ids import new_id

if TYPE_CHECKING:
    from kun.app.answers import Exported, ImportDone
    from kun.app.interface import ImportSource, Kun

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
@store_option
def export_command(thread: str, output: Path | None, force: bool, home: Path | None) -> None:
    """Write THREAD (an id or a unique prefix) as one bundle: its log byte for
    byte, its side files and a manifest with the SHA-256 of each."""
    from kun.app.drawing import bundle_name

    if output is not None and not output.absolute().parent.is_dir():
        raise click.BadParameter(
            f"{output}: there is no folder {output.absolute().parent}", param_hint="'-o'"
        )

    async def body(kun: Kun) -> tuple[Exported, Path]:
        out = output if output is not None else Path(bundle_name(await kun.resolve_thread(thread)))
        compress = not out.name.endswith(".tar")
        return await kun.export_thread(thread, out, compress=compress, force=force), out

    done, out = on_kun(home, body)
    events = plural(done.events, "event")
    click.echo(
        f"exported {done.thread_id} ({events}, {plural(done.side_files, 'side file')}) to {out}"
    )


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
    if replace and as_id is not None:
        raise click.UsageError("--replace and --as: give one (--as imports beside the thread)")

    from kun.app.drawing import import_refusal
    from kun.app.refusals import Refused

    async def body(kun: Kun) -> ImportDone:
        try:
            return await kun.import_thread(
                file,
                source=cast("ImportSource", source),
                as_id=as_id,
                replace=replace,
                workspace=workspace,
            )
        except Refused as exc:
            raise import_refusal(exc, file) from None

    said_import(on_kun(home, body))


def said_import(done: ImportDone) -> None:
    """What happened on stderr, the thread id alone on stdout (for scripts);
    a replaced thread's trash entry (``trash/NAME`` from either adapter)
    named as ``kun restore`` takes it."""
    thread_id, outcome, events = done.thread_id, done.outcome, done.events
    detail = written_out(done.detail, *(tuple(c) for c in done.suggests))
    trashed = None if done.trashed is None else Path(done.trashed).name
    if outcome == "already_imported":
        click.echo(f"already imported: {thread_id} ({detail or 'unchanged'})", err=True)
    else:
        click.echo(f"{outcome} {thread_id} ({plural(events, 'event')})", err=True)
        if detail:
            click.echo(detail, err=True)
    if trashed is not None:
        command = pasteable("restore", trashed, "--as", new_id("thr"))
        click.echo(
            f"the thread as it was is in the trash: {command} brings it back beside this one",
            err=True,
        )
    click.echo(thread_id)
