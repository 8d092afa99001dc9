"""``kun --server URL rewind | fork | compact``: the commands that reshape a
thread, done by a running ``kun serve`` (:mod:`kun.cli.remote`).

Each prints the lines the local command prints (their wording lives in
:mod:`kun.cli.threads` and :mod:`kun.cli.compact`, shared by both), so a
script or a reader cannot tell where the thread is held. The server's
answer is decoded into the same contract types (a files restore, a
compaction summary) before it is drawn. A refusal (an unknown thread, a
thread busy with a turn or waiting for an answer) is the server's own
message on one line, exit status 1 (:func:`kun.cli.remote.explained`).
"""

from __future__ import annotations

from typing import Any

import click

from kun.cli.remote import Remote, explained

__all__ = ["remote_compact", "remote_fork", "remote_rewind"]


def remote_rewind(remote: Remote, thread: str, before_turn: str | None, *, files: bool) -> None:
    """Rewind before ``before_turn`` (``files``: the files too), or with
    ``None`` undo the latest rewind."""
    from kun.cli.threads import rewound_line, undone_line
    from kun.runtime.checkpoints import describe_restore

    with explained(remote), remote.client() as client:
        if before_turn is None:
            undone = client.undo_rewind(thread)
            click.echo(undone_line(undone["thread_id"], undone["restored"], undone["rewind_seq"]))
            _echo_lines(describe_restore(_restore(undone), undo=True))
            return
        done = client.rewind(thread, before_turn, files=files)
    click.echo(
        rewound_line(
            done["thread_id"], done["turn_number"], done["turn_id"], done["hidden"], done["seq"]
        )
    )
    _echo_lines(describe_restore(_restore(done)))


def remote_fork(
    remote: Remote, thread: str, *, at_seq: int | None, at_turn: int | None
) -> tuple[str, str, int]:
    """The new thread, the thread it was forked from (its full id) and the
    source seq it stops at, as the local fork returns them (the last two
    read back from the new thread's projection). A fork point inside a turn
    gets the local fork's note on stderr."""
    with explained(remote), remote.client() as client:
        new = client.fork(thread, at_seq=at_seq, at_turn=at_turn)
        state = client.thread(new)
    origin = state["forked_from"]
    note = _cut_note(state["turns"], origin["seq"])
    if note is not None:
        click.echo(f"kun: note: {note}", err=True)
    return new, origin["thread_id"], origin["seq"]


def _cut_note(turns: list[dict[str, Any]], seq: int) -> str | None:
    """:func:`kun.domain.fork.cut_note`, read from the projection's JSON."""
    from kun.domain.fork import cut_line

    cut = [(n, t) for n, t in enumerate(turns, 1) if t.get("abort_reason") == "forked"]
    if not cut:
        return None
    number, turn = cut[-1]
    return cut_line(seq, number, turn["turn_id"])


def remote_compact(remote: Remote, thread: str) -> tuple[bool, str]:
    """Compact on the server and wait for the compaction turn to settle."""
    import msgspec

    from kun.cli.compact import compacted_line
    from kun.contracts.items import Compaction

    with explained(remote), remote.client() as client:
        thread_id = client.thread(thread)["thread_id"]
        turn_id = client.compact(thread_id)
        if turn_id is None:
            return compacted_line(thread_id, None, None)
        turn = client.wait_turn(thread_id, turn_id)
    found = [i for i in turn.get("items", ()) if i.get("type") == "compaction"]
    if turn["status"] == "completed" and found:
        summary = msgspec.convert(found[0], Compaction)
        return compacted_line(thread_id, turn_id, summary)
    error = turn.get("error") or {}
    return compacted_line(thread_id, turn_id, error.get("message") or turn["status"])


def _restore(answer: dict[str, Any]) -> object:
    """The answer's files restore, or ``None`` when no files were asked for."""
    import msgspec

    from kun.contracts.events import FilesRestore

    files = answer.get("files")
    return None if files is None else msgspec.convert(files, FilesRestore)


def _echo_lines(lines: list[str]) -> None:
    for line in lines:
        click.echo(line)
