"""``kun --server URL replay | threads | usage``: what those commands print,
read from a running ``kun serve`` (:mod:`kun.cli.remote`).

The server draws the transcript and the usage table with the same code as
the local commands, and the projection it serves is the same
``ThreadState``, so each prints the bytes the local command would print
for the same thread (the JSON projection is re-drawn by
:func:`kun.cli.replay.json_chunks`, which indents it). The server's text is
escaped for the terminal again here (:func:`kun.domain.shown.shown`): a
current server has done it already, an older or hostile one may not have.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kun.cli.remote import Remote, explained
from kun.domain.shown import shown

__all__ = ["remote_replay", "remote_threads", "remote_usage"]

PAGE = 500


def remote_replay(
    remote: Remote, thread: str, *, as_json: bool, until_seq: int | None, **flags: bool
) -> None:
    """The transcript (``hidden``, ``reasoning`` and ``until_seq`` as
    ``kun replay``'s flags), or with ``as_json`` the projection."""
    import msgspec

    from kun.cli.replay import json_chunks
    from kun.domain.state import ThreadState

    with explained(remote), remote.client() as client:
        if not as_json:
            text = client.transcript(thread, until_seq=until_seq, **flags)
            click.echo(shown(text), nl=False)
            return
        if until_seq is not None:
            raise click.UsageError("with --server, --until-seq prints a transcript, not --json")
        # The projection's raw fields (tool arguments) need the JSON text.
        state = msgspec.json.decode(msgspec.json.encode(client.thread(thread)), type=ThreadState)
    click.echo(b"".join(json_chunks([*state.turns, state])), nl=False)


def remote_threads(
    remote: Remote, *, here: bool, limit: int | None, show_all: bool, as_json: bool
) -> None:
    """The server's threads, newest activity first, as ``kun threads``
    prints them (``--here``: those whose workspace is this folder)."""
    import msgspec

    from kun.app.listing import ThreadSummary, to_json
    from kun.cli.threads import _table

    found: list[ThreadSummary] = []
    cursor: str | None = None
    where = str(Path.cwd().resolve()) if here else None
    with explained(remote), remote.client() as client:
        while limit is None or len(found) < limit:
            page = client.threads(limit=PAGE, cursor=cursor, include_hidden=show_all)
            for summary in msgspec.convert(page["threads"], list[ThreadSummary]):
                if where is None or summary.workspace == where:
                    found.append(summary)
            cursor = page["next_cursor"]
            if cursor is None:
                break
    found = found[:limit] if limit is not None else found
    if as_json:
        click.echo(to_json(found).decode())
    elif not found:
        click.echo(f"no threads at {remote.url}" + (f" for {where}" if where else ""))
    else:
        click.echo("\n".join(_table(found, [s.thread_id for s in found])))


def remote_usage(remote: Remote, threads: tuple[str, ...], *, as_json: bool) -> None:
    """One thread's usage, or two side by side, as ``kun usage`` prints it."""
    import msgspec

    with explained(remote), remote.client() as client:
        report: dict[str, Any] = client.usage(*threads)
        answer = report["text"] if not as_json else {"threads": report["threads"]}
    click.echo(shown(answer) if isinstance(answer, str) else msgspec.json.encode(answer).decode())
