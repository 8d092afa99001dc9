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
from kun.domain.transcript import plural

__all__ = ["gc", "restore", "rm", "trash"]


def _thread(home: Path | None, thread: str) -> tuple[Path, str]:
    from kun.app.lookup import resolve_thread_id
    from kun.store.paths import resolve_home

    root = resolve_home(home)
    return root, resolve_thread_id(root, thread)


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
    from kun.app import cleanup

    root, thread_id = _thread(home, thread)
    if confirm:
        freed = cleanup.confirm(root, thread_id)
        if freed:
            click.echo(f"removed the old generations of {thread_id}: {_bytes(freed)} freed")
        else:
            click.echo(f"{thread_id} keeps no old generation; nothing to remove")
        return
    report = cleanup.collect(root, thread_id)
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
    from kun.app.trash import remove_thread

    root, thread_id = _thread(home, thread)
    where = remove_thread(root, thread_id)
    click.echo(f"moved {thread_id} to {where}; {pasteable('restore', thread_id)} brings it back")


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
    from kun.app.trash import restore_thread
    from kun.store.paths import resolve_home

    thread_id = restore_thread(resolve_home(home), thread, as_id)
    click.echo(f"restored {thread_id}")


@click.command()
@home_option
def trash(home: Path | None) -> None:
    """List the threads in the trash, most recently removed first."""
    from kun.app.trash import trashed
    from kun.store.paths import resolve_home

    entries = trashed(resolve_home(home))
    if not entries:
        click.echo("the trash is empty")
    for entry in entries:
        when = entry.removed_at.astimezone().strftime("%Y-%m-%d %H:%M")
        click.echo(f"{entry.thread_id}  removed {when}  {entry.path.name}")


def _bytes(count: int) -> str:
    """Exact, so a script can read it."""
    return plural(count, "byte")
