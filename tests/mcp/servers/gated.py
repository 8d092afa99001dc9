"""``python gated.py GATE FAIL``: the demo server over stdio, once the file
GATE exists; if the file FAIL exists then too, it says so on stderr and
exits instead. A test decides when the server finishes starting, and
whether it fails, without changing its command line."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    gate, fail = Path(sys.argv[1]), Path(sys.argv[2])
    while not gate.exists():
        time.sleep(0.01)
    if fail.exists():
        sys.stderr.write("gated: told to fail\n")
        sys.exit(1)
    demo = Path(__file__).with_name("demo.py")
    os.execv(sys.executable, [sys.executable, str(demo)])
