"""Write the golden logs in ``events/golden/`` and the projections they replay to.

A golden log is a thread as the runtime writes it (``<name>.events.jsonl``)
next to the ``ThreadState`` that ``replay`` must build from it
(``<name>.expected.json``). Released logs are frozen: they are the proof that
every version kun ever wrote still replays, so this script refuses to rewrite
a log whose bytes would change (see ``events/CHANGELOG.md`` for how to freeze a
log under a versioned name before regenerating). Projections are rewritten
freely: a changed projection is a reviewed change to the reducer.

The threads are scripted in ``kun.testing.golden_threads`` (``THREADS``) on a
fixed clock and fixed ids, so the same code always writes the same bytes.

Usage::

    python tools/make_golden.py            # write new logs, refresh projections
    python tools/make_golden.py --check    # exit 1 if anything would change
    python tools/make_golden.py --force    # also rewrite changed logs (unreleased only)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from kun.contracts import events as ev
from kun.domain.reduce import replay
from kun.domain.state import ThreadState
from kun.domain.upcast import upcast
from kun.testing.golden_threads import THREADS

ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = ROOT / "events" / "golden"
COMMAND = "python tools/make_golden.py"
LOG_SUFFIX = ".events.jsonl"
EXPECTED_SUFFIX = ".expected.json"

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(ev.Event)
_raw_decoder = msgspec.json.Decoder()


def render_log(events: list[ev.Event]) -> bytes:
    """One event per line, each ending in ``\\n``: the log's wire format."""
    return _encoder.encode_lines(events)


def decode_event(line: bytes) -> ev.Event:
    """One line as the current contract sees it: upcast from the version it
    was written at (a no-op for current lines), then decoded strictly."""
    raw = _raw_decoder.decode(line)
    if isinstance(raw, dict):
        current = upcast(raw)
        if current is not raw:
            line = _encoder.encode(current)
    return _decoder.decode(line)


def decode_log(data: bytes) -> list[ev.Event]:
    """The events of a log; a line that does not decode names its number."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    events: list[ev.Event] = []
    for number, line in enumerate(lines, 1):
        try:
            events.append(decode_event(line))
        except (msgspec.DecodeError, LookupError) as exc:
            raise ValueError(f"line {number}: {exc}") from exc
    return events


def render_projection(state: ThreadState) -> bytes:
    """The expected file's exact bytes: the snapshot as indented JSON."""
    return msgspec.json.format(msgspec.json.encode(state), indent=2) + b"\n"


def expected_for(log: bytes) -> bytes:
    """What ``<name>.expected.json`` must hold for a log's bytes."""
    return render_projection(replay(decode_log(log)))


# -- writing -----------------------------------------------------------------


def build() -> dict[str, bytes]:
    """Every file the scripts produce, by file name: each log and the
    projection it replays to."""
    files: dict[str, bytes] = {}
    for name, script in THREADS.items():
        log = render_log(script())
        files[name + LOG_SUFFIX] = log
        files[name + EXPECTED_SUFFIX] = expected_for(log)
    return files


def pending_writes(
    golden_dir: Path = GOLDEN_DIR, *, force: bool = False
) -> tuple[dict[Path, bytes], list[Path]]:
    """What a run would write, and the frozen logs it refuses to change.

    A scripted log is written when it is new (or with ``force``); every log
    in the directory, scripted or frozen under another name, gets its
    projection recomputed from the bytes on disk."""
    writes: dict[Path, bytes] = {}
    refused: list[Path] = []
    logs: dict[Path, bytes] = {p: p.read_bytes() for p in sorted(golden_dir.glob("*" + LOG_SUFFIX))}
    for name, data in build().items():
        path = golden_dir / name
        if not name.endswith(LOG_SUFFIX) or logs.get(path) == data:
            continue
        if path in logs and not force:
            refused.append(path)
            continue
        writes[path] = logs[path] = data
    for log_path, data in logs.items():
        if log_path in refused:
            continue
        expected_path = log_path.with_name(log_path.name.removesuffix(LOG_SUFFIX) + EXPECTED_SUFFIX)
        expected = expected_for(data)
        if not expected_path.is_file() or expected_path.read_bytes() != expected:
            writes[expected_path] = expected
    return writes, refused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if anything would change")
    parser.add_argument("--force", action="store_true", help="rewrite changed logs too")
    args = parser.parse_args(argv)
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    writes, refused = pending_writes(force=args.force)
    for path in refused:
        print(
            f"{path.relative_to(ROOT)} would change, but released logs are frozen: rename it "
            f"(and its {EXPECTED_SUFFIX}) to <name>.v<N>{LOG_SUFFIX} and run again, "
            "or pass --force if it was never released",
            file=sys.stderr,
        )
    if args.check:
        for path in writes:
            print(f"{path.relative_to(ROOT)} is stale: run `{COMMAND}`", file=sys.stderr)
        return 1 if writes or refused else 0
    if refused:
        return 1
    for path, data in writes.items():
        path.write_bytes(data)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
