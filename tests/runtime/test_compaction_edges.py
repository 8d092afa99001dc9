"""Compaction edges in the loop: the threshold exactly (a prompt estimated
at ``compact_at`` of the window is sent as it is, one token more is
compacted first), and the provider bodies of the requests after a
compaction sharing their prefix byte for byte until the next one."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from kun.contracts.items import Compaction
from kun.contracts.model import WireFormat
from kun.domain.compaction import estimate_request_tokens
from kun.model.scripted import text_reply
from tests.model.request.histories import FORMATS
from tests.model.request.test_cache_prefix import codec, encoded
from tests.runtime.support import harness
from tests.runtime.test_compaction_loop import LONG, _is_summariser, _summary

pytestmark = pytest.mark.anyio


async def _second_prompt_estimate(tmp_path: Path) -> int:
    (tmp_path / "probe").mkdir()
    async with harness(tmp_path / "probe", [text_reply(LONG), text_reply("two")]) as h:
        await h.run("hello")
        await h.run("and now?")
        return estimate_request_tokens(h.model.requests[1])


@pytest.mark.parametrize(("offset", "compacted"), [(-1, True), (0, False), (1, False)])
async def test_the_threshold_edge(tmp_path: Path, offset: int, compacted: bool) -> None:
    """``compact_at`` 0.5 so the threshold is a whole number of tokens:
    the estimate over it compacts, at it or under it does not."""
    estimate = await _second_prompt_estimate(tmp_path)
    window = 2 * (estimate + offset)
    script = [text_reply(LONG), _summary(), text_reply("two"), text_reply("two")]
    (tmp_path / "run").mkdir()
    async with harness(tmp_path / "run", script) as h:
        h.service.compact_at = 0.5
        h.service.context_windows = lambda provider, model: window
        await h.run("hello")
        turn = await h.run("and now?")
        requests = h.model.requests
    assert turn.status == "completed"
    assert estimate_request_tokens(requests[1]) == estimate or compacted
    assert _is_summariser(requests[1]) is compacted
    assert any(isinstance(i, Compaction) for i in turn.items) is compacted


@pytest.mark.parametrize("fmt", FORMATS)
async def test_bodies_between_compactions_share_their_prefix(
    tmp_path: Path, fmt: WireFormat
) -> None:
    script = [text_reply(LONG), _summary(), *(text_reply(f"answer {n}") for n in range(4))]
    async with harness(tmp_path, script) as h:
        await h.run("hello")
        window = int((estimate_request_tokens(h.model.requests[0]) + 100) / 0.8)
        h.service.context_windows = lambda provider, model: window
        for n in range(4):
            assert (await h.run(f"question {n}")).status == "completed"
        steps = [r for r in h.model.requests[1:] if not _is_summariser(r)]
    assert len(steps) == 4 and all(isinstance(r.history[0], Compaction) for r in steps)
    shared = codec(fmt)
    bodies = [encoded(shared, fmt, request) for request in steps]
    for earlier, later in itertools.pairwise(bodies):
        assert later.startswith(earlier.rstrip(b"]}"))
