"""Write ``events/schema.json``: the JSON Schema of the event union.

The schema is generated from the Structs in ``kun.contracts.events`` so it can
never disagree with what the decoder accepts; it is committed so that readers
of the log in other languages, and reviewers of a contract change, see the
wire format without running Python. ``--check`` fails when the committed file
is stale; ``tests/events/test_schema.py`` runs the same comparison.

Usage::

    python tools/make_schema.py            # rewrite events/schema.json
    python tools/make_schema.py --check    # exit 1 if it is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from kun.contracts.events import Event

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = ROOT / "events" / "schema.json"
COMMAND = "python tools/make_schema.py"


def render_schema() -> bytes:
    """The schema file's exact bytes: sorted keys, two-space indent and a
    trailing newline, so regenerating an unchanged contract is a no-op diff."""
    schema = msgspec.json.schema(Event)
    encoded = msgspec.json.encode(schema, order="sorted")
    return msgspec.json.format(encoded, indent=2) + b"\n"


def is_stale(path: Path = SCHEMA_PATH) -> bool:
    return not path.is_file() or path.read_bytes() != render_schema()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if events/schema.json is stale"
    )
    args = parser.parse_args(argv)
    relative = SCHEMA_PATH.relative_to(ROOT)
    if args.check:
        if is_stale():
            print(f"{relative} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        print(f"{relative} is up to date")
        return 0
    SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_PATH.write_bytes(render_schema())
    print(f"wrote {relative}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
