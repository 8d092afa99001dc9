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

from kun.cli.options import home_option, log_of
from kun.cli.remote import local_only, remote_target
from kun.domain.transcript import plural

if TYPE_CHECKING:
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
    remote = remote_target()
    if remote is not None:
        from kun.cli.remote_threads import remote_compact

        local_only(config=config, home=home)
        ok, line = remote_compact(remote, thread)
    else:
        ok, line = _compact_here(home, thread, config)
    click.echo(line, err=not ok)
    if not ok:
        sys.exit(1)


def _compact_here(home: Path | None, thread: str, config: Path | None) -> tuple[bool, str]:
    import anyio

    from kun.store.paths import resolve_home

    thread_id, path = log_of(home, thread)
    if thread_id != path.parent.name:
        raise click.UsageError("kun compact takes a thread id (or a prefix of one), not a file")
    return anyio.run(_compact, resolve_home(home), thread_id, path, config)


def compacted_line(
    thread_id: str, turn_id: str | None, outcome: Compaction | str | None
) -> tuple[bool, str]:
    """Whether ``kun compact`` succeeded and its line, locally or over a
    server, so both say the same. ``outcome``: ``None`` when there was
    nothing to summarise (no turn), the turn's summary, or why it failed."""
    from kun.domain.compaction import text_tokens
    from kun.runtime.compact_turn import NOTHING_TO_COMPACT

    if outcome is None:
        return True, f"nothing to compact in {thread_id}: {NOTHING_TO_COMPACT}"
    if isinstance(outcome, str):
        return False, f"kun compact: {outcome}"
    summary = outcome
    return True, (
        f"compacted {plural(summary.replaced_items, 'item')} of {thread_id} into a summary of "
        f"about {text_tokens(summary.summary):,} tokens (turn {turn_id})"
    )


async def _compact(
    home: Path, thread_id: str, log: Path, config_path: Path | None
) -> tuple[bool, str]:
    from kun.app.selection import choose_model
    from kun.app.session import open_service
    from kun.config import load_config
    from kun.contracts.items import Compaction
    from kun.model.factory import build_router
    from kun.store.replay import replay_log

    config = load_config(config_path, home=home)
    settings = replay_log(log).settings
    router = build_router(config)
    model = choose_model(router, provider=None, model=None, settings=settings)
    async with router, open_service(home, model, config=config) as service:
        turn_id = await service.start_compaction(thread_id)
        if turn_id is None:
            return compacted_line(thread_id, None, None)
        turn = await service.wait_turn(thread_id, turn_id)
    summary = next((i for i in turn.items if isinstance(i, Compaction)), None)
    if turn.status == "completed" and summary is not None:
        return compacted_line(thread_id, turn_id, summary)
    reason = turn.error.message if turn.error is not None else turn.status
    return compacted_line(thread_id, turn_id, reason)
