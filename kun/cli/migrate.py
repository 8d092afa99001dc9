"""``kun migrate``: the home's threads into a PostgreSQL database
(``--to URL``) or back (``--from URL``), each copy proved before it is
called done (:mod:`kun.app.migrate`). One line per thread as it is done,
a count at the end; exit 1 when a thread was refused, held, missing or
failed."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kun.cli.options import home_option
from kun.domain.transcript import plural

if TYPE_CHECKING:
    from kun.app.migrate import Moved, Tally

__all__ = ["migrate"]

EXIT_FAILURE = 1


@click.command()
@click.option("--to", "to_url", metavar="URL", help="Copy into the database at URL.")
@click.option("--from", "from_url", metavar="URL", help="Copy from the database at URL.")
@click.option(
    "--thread",
    "threads",
    multiple=True,
    metavar="ID",
    help="Only this thread (repeatable; default: every thread).",
)
@click.option("--replace", is_flag=True, help="Overwrite a thread the target holds differently.")
@home_option
def migrate(
    to_url: str | None,
    from_url: str | None,
    threads: tuple[str, ...],
    replace: bool,
    home: Path | None,
) -> None:
    """Copy the home's threads into a PostgreSQL database (--to URL), or a
    database's into the home (--from URL), side files included. Each copy
    is checked (the thread replays the same on both sides, its side files
    read back whole) before it counts; a thread already there is left, one
    the target holds a prefix of is continued, one it holds differently is
    refused unless --replace. The password goes in $PGPASSWORD or ~/.pgpass."""
    import anyio

    from kun.app.home import resolve_home
    from kun.app.migrate import migrate_home
    from kun.app.stores import is_store_url

    if (to_url is None) == (from_url is None):
        raise click.UsageError("give one of --to URL and --from URL")
    url = to_url if to_url is not None else from_url
    assert url is not None
    if not is_store_url(url):
        option = "--to" if to_url is not None else "--from"
        raise click.UsageError(f"{option}: expected a URL such as postgresql://user@host/db")
    run = partial(
        migrate_home,
        resolve_home(home),
        url,
        back=from_url is not None,
        threads=threads or None,
        replace=replace,
        said=_say,
    )
    tally = anyio.run(run)
    click.echo(_summary(tally))
    if not tally.ok:
        sys.exit(EXIT_FAILURE)


def _say(moved: Moved) -> None:
    if moved.ok:
        details = [plural(moved.events, "event")] if moved.events else []
        if moved.side_files:
            details.append(plural(moved.side_files, "side file"))
        shown = f" ({', '.join(details)})" if details else ""
        click.echo(f"{moved.thread_id}: {moved.outcome}{shown}")
        return
    hint = "; --replace overwrites it" if moved.outcome == "refused" else ""
    click.echo(f"{moved.thread_id}: {moved.outcome}: {moved.why}{hint}", err=True)


def _summary(tally: Tally) -> str:
    total = sum(tally.counts.values())
    if not total:
        return f"no threads to copy from {tally.source}"
    counts = ", ".join(f"{n} {outcome}" for outcome, n in tally.counts.items())
    return f"{plural(total, 'thread')} from {tally.source} to {tally.target}: {counts}"
