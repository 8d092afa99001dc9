"""Shared helpers: run fixtures through parser + decoder, split every way."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from kun.contracts.model import (
    CompletedChunk,
    ErrorChunk,
    ModelStreamChunk,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    ToolCallCompleteChunk,
    UsageChunk,
    WireFormat,
)
from kun.model.sse import SSEEvent, SSEParser
from kun.model.wire import StreamDecoder, new_decoder

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


class Run:
    """One pass of bytes through a parser and a decoder."""

    def __init__(self, fmt: WireFormat, pieces: Iterable[bytes], *, batch: bool = True) -> None:
        self.parser = SSEParser()
        self.decoder: StreamDecoder = new_decoder(fmt)
        self.chunks: list[ModelStreamChunk] = []
        for piece in pieces:
            self._decode(self.parser.feed(piece), batch)
        self._decode(self.parser.flush(), batch)
        self.chunks += self.decoder.finish()

    def _decode(self, events: list[SSEEvent], batch: bool) -> None:
        if batch:
            self.chunks += self.decoder.feed_all(events)
        else:
            for event in events:
                self.chunks += self.decoder.feed(event)


def splits(data: bytes, seed: int = 0) -> Iterable[list[bytes]]:
    """Every two-piece split, one byte at a time, and random piece sizes."""
    for i in range(1, len(data)):
        yield [data[:i], data[i:]]
    yield [data[i : i + 1] for i in range(len(data))]
    rng = random.Random(seed)
    for _ in range(20):
        pieces, i = [], 0
        while i < len(data):
            step = rng.randint(1, 64)
            pieces.append(data[i : i + step])
            i += step
        yield pieces


def decode_everywhere(fmt: WireFormat, data: bytes) -> Run:
    """Decode ``data`` whole, event by event and in batches, then split in
    every way; all must agree."""
    whole = Run(fmt, [data])
    single = Run(fmt, [data], batch=False)
    assert single.chunks == whole.chunks
    assert single.decoder.skipped == whole.decoder.skipped
    for pieces in splits(data):
        run = Run(fmt, pieces)
        assert run.chunks == whole.chunks, f"split {[len(p) for p in pieces][:3]} differs"
        assert run.decoder.skipped == whole.decoder.skipped
        assert run.parser.comments == whole.parser.comments
    return whole


def decode_fixture(fmt: WireFormat, name: str) -> Run:
    return decode_everywhere(fmt, fixture(name))


def text(chunks: Sequence[ModelStreamChunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextDeltaChunk))


def reasoning(chunks: Sequence[ModelStreamChunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, ReasoningDeltaChunk))


def calls(chunks: Sequence[ModelStreamChunk]) -> list[tuple[str, str, Any, str]]:
    """(call_id, name, arguments, repair) of every complete chunk."""
    return [
        (c.call_id, c.name, msgspec.json.decode(c.arguments), c.repair)
        for c in chunks
        if isinstance(c, ToolCallCompleteChunk)
    ]


def usage(chunks: Sequence[ModelStreamChunk]) -> UsageChunk | None:
    found = [c for c in chunks if isinstance(c, UsageChunk)]
    assert len(found) <= 1
    return found[0] if found else None


def stop_reason(chunks: Sequence[ModelStreamChunk]) -> str:
    last = chunks[-1]
    assert isinstance(last, CompletedChunk), last
    assert sum(isinstance(c, (CompletedChunk, ErrorChunk)) for c in chunks) == 1
    return last.stop_reason


def error(chunks: Sequence[ModelStreamChunk]) -> ErrorChunk:
    last = chunks[-1]
    assert isinstance(last, ErrorChunk), last
    assert sum(isinstance(c, (CompletedChunk, ErrorChunk)) for c in chunks) == 1
    return last
