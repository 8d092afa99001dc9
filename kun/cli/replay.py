"""``kun replay``: a thread rebuilt from its log, as a transcript or as JSON.

Both print while the log is folded (see
:func:`kun.store.streaming.stream_replay`): a turn as soon as nothing later in
the log can change it, the thread's summary last, since only the whole log
knows it. The output is the same bytes however it is cut into writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import click

from kun.cli.options import home_option, log_of
from kun.cli.remote import local_only, remote_target
from kun.domain.transcript import plural

__all__ = ["json_chunks", "replay", "report_notes", "transcript_chunks"]

TRANSCRIPT_FLUSH_AT = 1 << 16
JSON_FLUSH_AT = 1 << 20
_TURN_LEAD = b'{\n  "turns": [\n    '
_TURN_HEAD = len(_TURN_LEAD)
_TURN_TAIL = len(b"\n  ]\n}")


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
@home_option
def replay(
    thread: str,
    as_json: bool,
    until_seq: int | None,
    from_seq: int | None,
    strict: bool,
    reasoning: bool,
    hidden: bool,
    home: Path | None,
) -> None:
    """Rebuild THREAD from its log and print its transcript.

    THREAD is a thread id, or the path of an events.jsonl file. The turns
    come first, as they are rebuilt, then the thread's summary and total.
    --from-seq N prints a page: a line naming the seqs, the turns that
    started or changed from seq N on (numbered as in the whole transcript),
    the warnings since and the thread's total.
    """
    remote = remote_target()
    if remote is not None:
        from kun.cli.remote_reads import remote_replay

        local_only(home=home, strict=strict, from_seq=from_seq)
        flags = {"hidden": hidden, "reasoning": reasoning}
        remote_replay(remote, thread, as_json=as_json, until_seq=until_seq, **flags)
        return
    _, path = log_of(home, thread)
    if from_seq is not None:
        if as_json:
            raise click.UsageError("--from-seq prints a transcript; --json prints the whole thread")
        _replay_since(path, from_seq, until_seq, strict=strict, hidden=hidden, reasoning=reasoning)
        return
    from kun.cli.rewind_scan import RewindScan

    # The scan runs while the fold is imported: see kun.cli.rewind_scan.
    with RewindScan(path) as scan:
        from kun.store.port import ReadReport
        from kun.store.streaming import stream_replay

        report = ReadReport()
        pieces = stream_replay(
            path,
            until=until_seq,
            mode="strict" if strict else "tolerant",
            report=report,
            rewound=scan.may_rewind,
            scanned=scan.size,
        )
        if as_json:
            _write_bytes(json_chunks(pieces), JSON_FLUSH_AT)
        else:
            _print_transcript(transcript_chunks(pieces, hidden=hidden, reasoning=reasoning))
    for note in report_notes(report):
        click.echo(note, err=True)


def transcript_chunks(
    pieces: Iterable[Any], *, hidden: bool = False, reasoning: bool = False
) -> Iterator[list[str]]:
    """The transcript's chunks (as :func:`kun.domain.transcript.iter_transcript`
    draws them) from the pieces of :func:`kun.store.streaming.stream_replay`."""
    from kun.domain.state import TurnState
    from kun.domain.transcript import summary_lines, turn_lines

    number = 0
    for piece in pieces:
        if isinstance(piece, TurnState):
            number += 1
            yield turn_lines(number, piece, show_hidden=hidden, show_reasoning=reasoning)
        else:
            yield summary_lines(piece)


def json_chunks(pieces: Iterable[Any]) -> Iterator[bytes]:
    """The projection as indented JSON, a turn at a time: ``turns`` first,
    then the thread's other fields, which only the whole log knows. Decodes
    to the same ``ThreadState`` as the whole projection encoded at once."""
    import msgspec

    from kun.domain.state import TurnState

    encode = msgspec.json.Encoder().encode
    form = msgspec.json.format
    opened = False
    for piece in pieces:
        if isinstance(piece, TurnState):
            # Formatted inside a one-turn ``turns`` list, the turn comes out
            # indented as it sits in the document: one pass fewer than
            # indenting it after formatting.
            body = form(encode({"turns": [piece]}), indent=2)[_TURN_HEAD:-_TURN_TAIL]
            yield (b",\n    " if opened else _TURN_LEAD) + body
            opened = True
            continue
        shell = form(encode(msgspec.structs.replace(piece, turns=())), indent=2)
        rest = shell.replace(b'\n  "turns": [],', b"", 1)[1:]
        yield (b"\n  ]," if opened else b'{\n  "turns": [],') + rest + b"\n"


def _print_transcript(chunks: Iterator[list[str]]) -> None:
    """Print the transcript as it is drawn: the first chunk at once, then
    about ``TRANSCRIPT_FLUSH_AT`` characters at a time, the same bytes as
    one ``echo`` of every line joined."""
    pending: list[str] = []
    size = 0
    for number, chunk in enumerate(chunks):
        text = "\n".join(chunk)
        pending.append(text)
        size += len(text) + 1
        if number == 0 or size >= TRANSCRIPT_FLUSH_AT:
            click.echo("\n".join(pending))
            pending, size = [], 0
    if pending:
        click.echo("\n".join(pending))


def _write_bytes(chunks: Iterator[bytes], flush_at: int) -> None:
    """Write ``chunks`` to stdout about ``flush_at`` bytes at a time, the
    first at once."""
    pending: list[bytes] = []
    size = 0
    for number, chunk in enumerate(chunks):
        pending.append(chunk)
        size += len(chunk)
        if number == 0 or size >= flush_at:
            click.echo(b"".join(pending), nl=False)
            pending, size = [], 0
    if pending:
        click.echo(b"".join(pending), nl=False)


def _replay_since(
    path: Path, since: int, until: int | None, *, strict: bool, hidden: bool, reasoning: bool
) -> None:
    from kun.domain.transcript import render_since
    from kun.store.port import ReadReport
    from kun.store.replay import replay_since

    report = ReadReport()
    before, state = replay_since(
        path, since, until=until, mode="strict" if strict else "tolerant", report=report
    )
    click.echo("\n".join(render_since(before, state, show_hidden=hidden, show_reasoning=reasoning)))
    for note in report_notes(report):
        click.echo(note, err=True)


def report_notes(report: Any) -> Iterator[str]:
    """What a tolerant read skipped or found missing, one note each."""
    if report.seq_gaps:
        before, after = report.first_gap
        yield (
            f"note: {plural(report.missing_seqs, 'event')} missing from the log "
            f"(its seqs jump {plural(report.seq_gaps, 'time')}, first from seq {before} "
            f"to {after}); "
            "--strict refuses such logs"
        )
    if report.unknown:
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(report.unknown_kinds.items()))
        yield (
            f"note: skipped {plural(report.unknown, 'event')} of kinds this kun does not know "
            f"({kinds}); "
            "the log was written by a newer kun (--strict refuses such logs)"
        )
    torn = report.torn_tail
    if torn is not None:
        yield (
            f"note: ignored a torn last line ({torn.size} bytes at line {torn.line}: "
            f"{torn.reason}); the next write to this thread repairs it"
        )
