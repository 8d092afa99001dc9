"""The pure rewind plan (:mod:`kun.domain.checkpoints`): which files go
back and which are left alone, from checkpoints and hashes on disk."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from kun.contracts.items import BlobRef, FileCheckpoint
from kun.domain.checkpoints import NOT_A_FILE, RestoreAction, file_changes, plan_restore


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _ref(text: str) -> BlobRef:
    return BlobRef(sha256=_sha(text), size=len(text.encode()))


def _change(path: str, before: str | None, after: str) -> FileCheckpoint:
    return FileCheckpoint(
        path=path, before=None if before is None else _ref(before), after_sha256=_sha(after)
    )


def test_a_created_file_is_removed_and_an_edited_one_gets_its_first_content() -> None:
    points = [_change("n", None, "1"), _change("e", "a", "b"), _change("e", "b", "c")]
    plan = plan_restore(points, {"n": _sha("1"), "e": _sha("c")})
    assert plan.actions == (
        RestoreAction(path="n", content=None, expected=_sha("1")),
        RestoreAction(path="e", content=_ref("a"), expected=_sha("c")),
    )
    assert plan.skipped == ()


def test_files_changed_or_deleted_since_are_left_alone_with_a_reason() -> None:
    points = [_change("x", "a", "b"), _change("y", "a", "b"), _change("z", "a", "b")]
    plan = plan_restore(points, {"x": _sha("mine"), "z": NOT_A_FILE})
    assert plan.actions == ()
    reasons = {s.path: s.reason for s in plan.skipped}
    assert "changed since" in reasons["x"]
    assert "deleted since" in reasons["y"]
    assert "not a regular file" in reasons["z"] or "no longer" in reasons["z"]


def test_a_change_between_kuns_own_changes_breaks_the_chain() -> None:
    points = [_change("f", "a", "b"), _change("f", "bash made this", "c")]
    plan = plan_restore(points, {"f": _sha("c")})
    assert plan.actions == ()
    assert "between kun's own changes" in plan.skipped[0].reason


def test_a_file_already_as_it_was_needs_nothing() -> None:
    plan = plan_restore([_change("f", "a", "b"), _change("g", None, "1")], {"f": _sha("a")})
    assert plan.actions == () and plan.skipped == ()
    assert plan.unchanged == ("f", "g")


@given(st.lists(st.text(max_size=3), min_size=2, max_size=6), st.booleans())
def test_kuns_own_chain_always_goes_back_to_the_start(contents: list[str], created: bool) -> None:
    """Whatever kun wrote in a row, with nobody else in between, undoing
    from the last content reaches the first (or no file); and from any
    other content on disk, nothing is touched."""
    first: str | None = None if created else contents[0]
    writes = contents if created else contents[1:]
    points, before = [], first
    for text in writes:
        points.append(_change("f", before, text))
        before = text
    plan = plan_restore(points, {"f": _sha(writes[-1])})
    if _sha(writes[-1]) == (None if first is None else _sha(first)):
        assert plan.actions == ()
    else:
        (action,) = plan.actions
        assert action.content == (None if first is None else _ref(first))
    outsider = plan_restore(points, {"f": _sha("\x00 not kun's")})
    assert outsider.actions == ()


def test_file_changes_come_in_log_order_each_result_once() -> None:
    from kun.contracts import events as ev
    from kun.contracts.items import ToolResult

    first, second = _change("f", None, "1"), _change("f", "1", "2")
    result = ToolResult(id="res_1", call_id="c", checkpoint=first)
    restore = ev.FilesRestore(restored=(_change("f", "2", "1"),))
    events = [
        ev.ItemCompleted(seq=1, at=0, item=result),
        ev.ItemCompleted(seq=2, at=0, item=result),
        ev.ItemCompleted(seq=3, at=0, item=ToolResult(id="res_2", call_id="d", checkpoint=second)),
        ev.ThreadRewound(seq=4, at=0, before_turn_id="t", files=restore),
        ev.ItemCompleted(seq=5, at=0, item=ToolResult(id="res_3", call_id="e")),
    ]
    assert file_changes(events) == [first, second, *restore.restored]
