"""Side files keep what the model is sent exactly as the tool returned it
(kun.runtime.sidefiles, issue 10, item 6), and every attachment exactly as
it was when recorded, whatever happens to its file afterwards."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
from hypothesis import given
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import Attachment, ToolResult, UserMessage
from kun.model.request.images import HeldAttachment
from kun.runtime.sidefiles import SideFiles, copy_side_files, head, keep_attachments, side_file_refs
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


@given(st.lists(st.binary(max_size=64), max_size=5), st.booleans())
def test_kept_attachments_resolve_to_their_recorded_bytes(
    contents: list[bytes], in_a_tool_result: bool
) -> None:
    """Whatever the files hold later (here: deleted), a kept attachment
    resolves to its bytes as recorded, in order; its side files are
    exactly the ones the event names, and a copy of them (a fork, a
    bundle) is enough to resolve it again."""
    blobs = MemoryBlobStore("thr_1")
    with tempfile.TemporaryDirectory() as folder:
        given_attachments = []
        for n, data in enumerate(contents):
            path = Path(folder) / f"f{n}"
            path.write_bytes(data)
            given_attachments.append(
                Attachment(name=f"f{n}", mime_type="image/png", path=str(path))
            )
        kept = anyio.run(keep_attachments, blobs, given_attachments)
    assert [a.ref.size if a.ref else None for a in kept] == [len(d) for d in contents]
    item: ToolResult | UserMessage
    if in_a_tool_result:
        item = ToolResult(id="res_1", call_id="c", output="x", attachments=kept)
    else:
        item = UserMessage(id="msg_1", text="look", attachments=kept)
    event = ev.ItemCompleted(seq=1, at=0, thread_id="thr_1", turn_id="t", item=item)
    assert {r.sha256 for r in side_file_refs(event)} == set(blobs.blobs)
    copy = MemoryBlobStore("thr_2")
    assert copy_side_files([event], blobs, copy) == len(contents)
    for store in (blobs, copy):
        (whole,) = SideFiles(store).resolve([item])
        assert isinstance(whole, ToolResult | UserMessage)
        sent = whole.attachments
        assert all(isinstance(a, HeldAttachment) for a in sent)
        assert [a.data for a in sent if isinstance(a, HeldAttachment)] == contents
        assert [a.path for a in sent] == [a.path for a in given_attachments]
