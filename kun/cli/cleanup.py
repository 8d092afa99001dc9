"""Explicit clean-up, never automatic: ``kun gc``, ``kun rm``, ``kun
restore`` and ``kun trash``, registered by :mod:`kun.cli`.

``gc`` rewrites one thread's log without what rewinds hid and moves loose
side files out, keeping the old generation until ``gc --confirm``
(:mod:`kun.app.cleanup`); ``rm`` moves a thread to the trash, ``restore``
brings it back, ``trash`` lists it (:mod:`kun.app.trash`). All refuse a
thread another process is writing.
"""

from __future__ import annotations

from pathlib import Path

import click

from kun.cli.options import home_option, pasteable
from kun.cli.reading import on_kun
from kun.domain.transcript import plural

__all__ = ["gc", "restore", "rm", "trash"]


@click.command()
@click.argument("thread")
@click.option(
    "--confirm",
    is_flag=True,
    help="Remove the old generations an earlier gc kept (nothing else is done).",
)
@home_option
def gc(thread: str, confirm: bool, home: Path | None) -> None:
    """Write a new generation of THREAD's log without the turns rewinds hid
    and without side files nothing names; the old generation is kept beside
    it until `kun gc THREAD --confirm`."""
    report = on_kun(home, lambda kun: kun.collect(thread, confirm=confirm))
    thread_id = report.thread_id
    if confirm:
        if report.freed:
            click.echo(f"removed the old generations of {thread_id}: {_bytes(report.freed)} freed")
        else:
            click.echo(f"{thread_id} keeps no old generation; nothing to remove")
        return
    if report.generation is None:
        click.echo(f"nothing to collect in {thread_id}: no hidden turn, no loose side file")
        return
    click.echo(
        f"{thread_id}: dropped {plural(report.turns, 'hidden turn')} "
        f"({plural(report.events, 'event')}) and {plural(report.side_files, 'side file')}; "
        f"{_bytes(report.bytes_saved)} saved "
        f"once the old generation ({report.generation}) is removed: "
        f"{pasteable('gc', thread_id, '--confirm')}"
    )


@click.command()
@click.argument("thread")
@home_option
def rm(thread: str, home: Path | None) -> None:
    """Move THREAD to the trash under the kun home (`kun restore` brings it
    back; nothing in the trash is deleted by kun)."""
    done = on_kun(home, lambda kun: kun.trash_thread(thread))
    click.echo(
        f"moved {done.thread_id} to the trash as {done.entry}; "
        f"{pasteable('restore', done.thread_id)} brings it back"
    )


@click.command()
@click.argument("thread")
@click.option(
    "--as",
    "as_id",
    default=None,
    help="Restore it under this thread id (when its own is taken again).",
)
@home_option
def restore(thread: str, as_id: str | None, home: Path | None) -> None:
    """Bring THREAD back from the trash (its id, or an entry `kun trash` lists)."""
    done = on_kun(home, lambda kun: kun.restore_thread(thread, as_id=as_id))
    click.echo(f"restored {done.thread_id}")


@click.command()
@home_option
def trash(home: Path | None) -> None:
    """List the threads in the trash, most recently removed first."""
    from datetime import datetime

    page = on_kun(home, lambda kun: kun.trash())
    if not page.entries:
        click.echo("the trash is empty")
    for entry in page.entries:
        removed = datetime.fromtimestamp(entry.removed_at / 1000).astimezone()
        click.echo(
            f"{entry.thread_id}  removed {removed.strftime('%Y-%m-%d %H:%M')}  {entry.entry}"
        )


def _bytes(count: int) -> str:
    """Exact, so a script can read it."""
    return plural(count, "byte")
