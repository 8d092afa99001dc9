"""``kun replay``: a thread rebuilt from its log, as a transcript or as JSON.

The output comes as the log is folded (:meth:`kun.app.interface.Kun.replay`):
a turn as soon as nothing later in the log can change it, the thread's
summary last, since only the whole log knows it; the notes of what the read
skipped go to stderr once it is done. An ``events.jsonl`` FILE given as
THREAD is read here (:mod:`kun.cli.reading`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kun.cli.options import home_option, store_option
from kun.cli.reading import with_kun_if

if TYPE_CHECKING:
    from kun.app.interface import Kun

__all__ = ["replay"]


@click.command()
@click.argument("thread")
@click.option("--json", "as_json", is_flag=True, help="Print the projection as JSON.")
@click.option(
    "--until-seq",
    type=click.IntRange(min=0),
    default=None,
    help="Replay only the events up to this seq.",
)
@click.option(
    "--from-seq",
    type=click.IntRange(min=1),
    default=None,
    help="Print only what happened from this seq on: the turns it started or changed.",
)
@click.option("--strict", is_flag=True, help="Refuse events of unknown kinds.")
@click.option("--reasoning", is_flag=True, help="Show reasoning instead of folding it.")
@click.option("--hidden", is_flag=True, help="Show turns hidden by a rewind.")
@click.option(
    "--children", is_flag=True, help="Show each sub-agent's turns under the call that ran it."
)
@home_option
@store_option
def replay(
    thread: str,
    as_json: bool,
    until_seq: int | None,
    from_seq: int | None,
    strict: bool,
    reasoning: bool,
    hidden: bool,
    children: bool,
    home: Path | None,
) -> None:
    """Rebuild THREAD from its log and print its transcript.

    THREAD is a thread id, or the path of an events.jsonl file (read here,
    even with --server). The turns come first, as they are rebuilt, then
    the thread's summary and total. --from-seq N prints a page: a line
    naming the seqs, the turns that started or changed from seq N on
    (numbered as in the whole transcript), the warnings since and the
    thread's total. A sub-agent's work is a line under its delegate_task
    call naming its side thread; --children puts its turns there.
    """
    from kun.app.logfile import LogFile, log_file
    from kun.app.requests import ReplayThread

    if from_seq is not None and as_json:
        raise click.UsageError("--from-seq prints a transcript; --json prints the whole thread")
    request = ReplayThread(
        json=as_json,
        until_seq=until_seq,
        from_seq=from_seq,
        strict=strict,
        hidden=hidden,
        reasoning=reasoning,
        children=children,
    )
    path = log_file(thread)

    async def body(kun: Kun | None) -> list[str]:
        from contextlib import aclosing

        from kun.app.answers import ReplayNote

        notes: list[str] = []
        reader = kun if path is None else LogFile(thread, path)
        assert reader is not None
        async with aclosing(reader.replay(thread, request)) as pieces:
            async for piece in pieces:
                if isinstance(piece, ReplayNote):
                    notes.append(piece.text)
                else:  # text as before: a text stdout (the demo's) takes it too
                    click.echo(piece if as_json else piece.decode(), nl=False)
        return notes

    for note in with_kun_if(home, path is None, body):
        click.echo(note, err=True)
