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

import click

from kun.cli.options import home_option, log_of

__all__ = ["compact"]


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
    import anyio

    from kun.store.paths import resolve_home

    thread_id, path = log_of(home, thread)
    if thread_id != path.parent.name:
        raise click.UsageError("kun compact takes a thread id (or a prefix of one), not a file")
    ok, line = anyio.run(_compact, resolve_home(home), thread_id, path, config)
    click.echo(line, err=not ok)
    if not ok:
        sys.exit(1)


async def _compact(
    home: Path, thread_id: str, log: Path, config_path: Path | None
) -> tuple[bool, str]:
    from kun.app.selection import choose_model
    from kun.app.session import open_service
    from kun.config import load_config
    from kun.contracts.items import Compaction
    from kun.domain.compaction import text_tokens
    from kun.model.factory import build_router
    from kun.runtime.compact_turn import NOTHING_TO_COMPACT
    from kun.store.replay import replay_log

    config = load_config(config_path, home=home)
    settings = replay_log(log).settings
    router = build_router(config)
    model = choose_model(router, provider=None, model=None, settings=settings)
    async with router, open_service(home, model, config=config) as service:
        turn_id = await service.start_compaction(thread_id)
        if turn_id is None:
            return True, f"nothing to compact in {thread_id}: {NOTHING_TO_COMPACT}"
        turn = await service.wait_turn(thread_id, turn_id)
    summary = next((i for i in turn.items if isinstance(i, Compaction)), None)
    if turn.status == "completed" and summary is not None:
        return True, (
            f"compacted {summary.replaced_items} items of {thread_id} into a summary of about "
            f"{text_tokens(summary.summary):,} tokens (turn {turn_id})"
        )
    reason = turn.error.message if turn.error is not None else turn.status
    return False, f"kun compact: {reason}"
