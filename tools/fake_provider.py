"""Run the loopback fake provider standalone, for manual testing and
benchmarks.

    python tools/fake_provider.py --format chat_completions --port 8765 --script script.json

Serves on 127.0.0.1 until SIGINT or SIGTERM, printing ``listening on <base url>``
first (``--port 0`` picks a free port; read it from that line). The script
is a JSON list; each item is either a list of kun chunks (objects tagged
by ``kind``, as in the event log) or an object with the fields of
:class:`kun.testing.fake_provider.FakeResponse` (``chunks``, ``status``,
``retry_after``, ``stalls``, ``truncate_at``, ``per_event``, ...), where
``raw_text`` may stand for ``raw``. Responses are served in order and the
script starts over when it runs out (``--once`` answers 501 instead).
Without ``--script``, every request gets a short greeting. ``--dialect kimi``
answers chat completions as Moonshot does (reasoning as
``reasoning_content`` deltas, Moonshot's usage object), to point a
``dialect = "kimi"`` provider at. Requests are
not kept (nothing reads them here, and a long benchmark would hold every
body).

Example script::

    [
      [{"kind": "assistant_text_delta", "text": "Hello"},
       {"kind": "completed", "stop_reason": "stop"}],
      {"status": 429, "retry_after": "1"},
      {"raw_text": "data: [DONE]\\n\\n"}
    ]
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

import anyio
import msgspec

from kun.contracts.model import CompletedChunk, ModelStreamChunk, TextDeltaChunk, WireFormat
from kun.testing.fake_provider import FakeProvider, FakeResponse, ScriptItem
from kun.testing.wire import Dialect

GREETING: list[ModelStreamChunk] = [
    TextDeltaChunk(text="Hello from the fake provider."),
    CompletedChunk(stop_reason="stop"),
]


class ScriptedResponse(FakeResponse, frozen=True, kw_only=True):
    """A script file's response: ``raw_text`` may stand for ``raw``."""

    raw_text: str | None = None


def load_script(path: Path) -> list[ScriptItem]:
    """The script file's items, decoded straight into chunks and responses."""
    items = msgspec.json.decode(
        path.read_bytes(), type=list[list[ModelStreamChunk] | ScriptedResponse]
    )
    out: list[ScriptItem] = []
    for item in items:
        if isinstance(item, ScriptedResponse) and item.raw_text is not None:
            item = msgspec.structs.replace(item, raw=item.raw_text.encode(), raw_text=None)
        out.append(item)
    return out


async def serve(
    script: list[ScriptItem],
    format: WireFormat | None,
    port: int,
    once: bool,
    dialect: Dialect | None = None,
) -> None:
    provider = FakeProvider(
        script, format=format, dialect=dialect, port=port, cycle=not once, record=False
    )
    async with provider:
        print(f"listening on {provider.base_url}", flush=True)
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--format",
        choices=["chat_completions", "responses", "messages", "gemini"],
        help="wire format (default: from the request path)",
    )
    parser.add_argument(
        "--dialect", choices=["kimi"], help="chat completions as Moonshot speaks it"
    )
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any)")
    parser.add_argument("--script", type=Path, help="JSON script (default: a greeting)")
    parser.add_argument("--once", action="store_true", help="do not start the script over")
    args = parser.parse_args(argv)
    script: list[ScriptItem] = load_script(args.script) if args.script else [GREETING]
    anyio.run(serve, script, args.format, args.port, args.once, args.dialect)
    return 0


if __name__ == "__main__":
    sys.exit(main())
