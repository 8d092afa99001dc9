"""Settling a killed restore from the disk: every planned file is accounted
for exactly once, restored exactly when it holds what the restore meant to
leave, and the reason for the others says whether kun got to it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kun.contracts import events as ev
from kun.contracts.items import BlobRef, FileCheckpoint
from kun.runtime.restore_recovery import NOT_REACHED, SOMEONE_ELSE, restore_outcome

_hashes = st.sampled_from(["1" * 64, "2" * 64, "3" * 64])


@st.composite
def _cases(draw: st.DrawFn) -> tuple[ev.FilesRestoreStarted, dict[str, str | None]]:
    paths = draw(st.lists(st.sampled_from("abcdef"), unique=True, max_size=6))
    planned, disk = [], {}
    for path in paths:
        before = draw(st.none() | _hashes)
        after = draw(st.none() | _hashes)
        if after == before:
            continue
        ref = None if before is None else BlobRef(sha256=before, size=1)
        planned.append(FileCheckpoint(path=path, before=ref, after_sha256=after))
        disk[path] = draw(st.sampled_from([before, after, "9" * 64]))
    skipped = (ev.FileSkipped(path="z", reason="changed since kun changed it"),)
    intent = ev.FilesRestoreStarted(
        seq=9, at=0, thread_id="t", before_turn_id="u", planned=tuple(planned), skipped=skipped
    )
    return intent, disk


@given(_cases())
def test_every_planned_file_is_accounted_for_as_the_disk_says(
    case: tuple[ev.FilesRestoreStarted, dict[str, str | None]],
) -> None:
    intent, disk = case
    done = restore_outcome(intent, disk)
    restored = [p.path for p in done.restored]
    skipped = {s.path: s.reason for s in done.skipped}
    assert sorted(restored + list(skipped)) == sorted([p.path for p in intent.planned] + ["z"])
    for point in intent.planned:
        before = None if point.before is None else point.before.sha256
        if disk[point.path] == point.after_sha256:
            assert point in done.restored
        elif disk[point.path] == before:
            assert skipped[point.path] == NOT_REACHED
        else:
            assert skipped[point.path] == SOMEONE_ELSE
