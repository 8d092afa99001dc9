"""``python once.py MARKER``: the demo server over stdio, the first time
only. It creates MARKER when it starts and exits at once when MARKER exists:
a server that cannot be restarted. Imports nothing heavy, so a refused start
costs little."""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __name__ == "__main__":
    marker = Path(sys.argv[1])
    if marker.exists():
        sys.exit(2)
    marker.touch()
    demo = Path(__file__).with_name("demo.py")
    os.execv(sys.executable, [sys.executable, str(demo)])
