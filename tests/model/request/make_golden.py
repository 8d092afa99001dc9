"""Write the golden request bodies: ``golden/<case>.<format>.json``.

Every case of :mod:`tests.model.request.histories` in every wire format, as
the codec encodes it, pretty-printed with sorted-free (insertion) key order so
the file shows the body exactly as sent. ``test_golden_bodies`` compares
byte for byte; after an intended change, regenerate and review the diff::

    python -m tests.model.request.make_golden           # rewrite every file
    python -m tests.model.request.make_golden --check   # exit 1 if any is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from kun.contracts.model import WireFormat
from tests.model.request.histories import CASES, FORMATS

GOLDEN = Path(__file__).resolve().parent / "golden"


def golden_path(case: str, fmt: WireFormat) -> Path:
    return GOLDEN / f"{case}.{fmt}.json"


def render(case: str, fmt: WireFormat) -> bytes:
    """The body of ``case`` in ``fmt``, as the golden file holds it."""
    body = CASES[case].encode(fmt)
    return msgspec.json.format(msgspec.json.encode(body), indent=2) + b"\n"


def stale() -> list[Path]:
    paths = []
    for case in CASES:
        for fmt in FORMATS:
            path = golden_path(case, fmt)
            if not path.is_file() or path.read_bytes() != render(case, fmt):
                paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = parser.parse_args(argv)
    if args.check:
        paths = stale()
        for path in paths:
            print(f"stale: {path.name}")
        return 1 if paths else 0
    GOLDEN.mkdir(exist_ok=True)
    for case in CASES:
        for fmt in FORMATS:
            golden_path(case, fmt).write_bytes(render(case, fmt))
    print(f"wrote {len(CASES) * len(FORMATS)} files to {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
