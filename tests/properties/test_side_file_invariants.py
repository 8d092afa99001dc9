"""Side files keep what the model is sent exactly as the tool returned it
(kun.runtime.sidefiles, issue 10, item 6)."""

from __future__ import annotations

import anyio
from hypothesis import given
from hypothesis import strategies as st

from kun.contracts.items import ToolResult
from kun.runtime.sidefiles import SideFiles, head
from kun.store.blobs import MemoryBlobStore


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_spill_then_resolve_gives_back_the_output_exactly(text: str, threshold: int) -> None:
    side = SideFiles(MemoryBlobStore("thr_1"), threshold=threshold)
    logged, ref = anyio.run(side.spill, text)
    size = len(text.encode())
    assert (ref is None) == (size <= threshold)
    assert logged == (text if ref is None else head(text))
    result = ToolResult(id="res_1", call_id="c", output=logged, output_ref=ref)
    (whole,) = side.resolve([result])
    assert isinstance(whole, ToolResult) and whole.output == text


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_the_head_is_the_longest_prefix_within_the_limit(text: str, limit: int) -> None:
    cut = head(text, limit)
    assert text.startswith(cut) and len(cut.encode()) <= limit
    if cut != text:
        assert len(text[: len(cut) + 1].encode()) > limit
