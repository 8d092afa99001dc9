"""Differential run: kun's Gemini stream decoder against Google's SDK.

    PYTHONPATH=. python tools/diff_gemini_sdk.py --streams 50000 [--start 0]

Each seed makes one random, well-formed Gemini SSE stream cut into random
byte pieces (``tests/model/gemini_sdk.py``); kun's parser and decoder and
the ``google-genai`` SDK (a real client over a mock transport) read the same
pieces, and their text, thoughts, function calls, ending and usage are
compared. Prints the number of mismatches and the first few seeds that
differ, and exits 1 if there was any.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from tests.model.gemini_sdk import SdkReader, mismatch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=20000, help="how many streams")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--show", type=int, default=5, help="mismatches to print")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    reader = SdkReader()
    started = time.perf_counter()
    found = 0
    try:
        for seed in range(args.start, args.start + args.streams):
            differ = mismatch(seed, reader)
            if differ is None:
                continue
            found += 1
            if found <= args.show:
                ours, theirs = differ
                print(f"seed {seed}:\n  kun: {ours}\n  sdk: {theirs}")
    finally:
        reader.close()
    elapsed = time.perf_counter() - started
    print(f"{found} mismatches in {args.streams} streams ({elapsed:.1f} s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
