"""``kun compact THREAD``: summarise a thread's history now, as ``/compact``
does in the session (:mod:`kun.runtime.compact_turn`).

The summary is written by the thread's own model (its provider and model
from the log, the configuration's credentials). It prints one line: what
was compacted, or that there is nothing to summarise yet (exit 0 either
way); a failed summary exits 1 with the reason.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kun.cli.options import home_option
from kun.cli.reading import on_kun
from kun.domain.transcript import plural

if TYPE_CHECKING:
    from kun.app.interface import Kun, TurnState
    from kun.contracts.items import Compaction

__all__ = ["compact", "compacted_line"]


@click.command()
@click.argument("thread")
@click.option(
    "--config",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="kun.toml to use (default: $KUN_CONFIG, ./kun.toml, $KUN_HOME/kun.toml).",
)
@home_option
def compact(thread: str, config: Path | None, home: Path | None) -> None:
    """Summarise THREAD's history now: later turns start from the summary
    (kun rewind takes it back like any turn)."""
    from kun.app.logfile import log_file

    if log_file(thread) is not None:
        raise click.UsageError("kun compact takes a thread id (or a prefix of one), not a file")

    async def body(kun: Kun) -> tuple[bool, str]:
        started = await kun.compact(thread)
        if started.turn_id is None:
            return compacted_line(started.thread_id, None, started.reason or "")
        turn = await kun.wait_turn(started.thread_id, started.turn_id)
        return _outcome(started.thread_id, turn)

    ok, line = on_kun(home, body, config=config)
    click.echo(line, err=not ok)
    if not ok:
        sys.exit(1)


def _outcome(thread_id: str, turn: TurnState) -> tuple[bool, str]:
    from kun.contracts.items import Compaction

    summary = next((i for i in turn.items if isinstance(i, Compaction)), None)
    if turn.status == "completed" and summary is not None:
        return compacted_line(thread_id, turn.turn_id, summary)
    reason = turn.error.message if turn.error is not None else turn.status
    return False, f"kun compact: {reason}"


def compacted_line(
    thread_id: str, turn_id: str | None, outcome: Compaction | str
) -> tuple[bool, str]:
    """Whether ``kun compact`` succeeded and its line. ``outcome``: the
    turn's summary, or (no turn: ``turn_id`` ``None``) why there was nothing
    to summarise."""
    from kun.app.drawing import summary_tokens

    if turn_id is None:
        return True, f"nothing to compact in {thread_id}: {outcome}"
    assert not isinstance(outcome, str)
    return True, (
        f"compacted {plural(outcome.replaced_items, 'item')} of {thread_id} into a summary of "
        f"about {summary_tokens(outcome):,} tokens (turn {turn_id})"
    )
