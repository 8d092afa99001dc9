"""Invariants of putting files back, over random histories of kun's writes
and other programs' writes and deletions (:mod:`kun.runtime.checkpoints`):

* a file nobody but kun touched since the cut is back as it was at the cut;
* a file is changed by the restore only if it held what kun last left in it
  (another program's work is never overwritten);
* undoing the restore, with nothing changed in between, gives back exactly
  the files as they were before it.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kun.contracts.items import FileCheckpoint
from kun.runtime.checkpoints import restore
from kun.store.blobs import MemoryBlobStore

PATHS = ("a", "d/b", "c")
CONTENTS = st.one_of(st.none(), st.binary(max_size=4))
OPS = st.lists(
    st.tuples(st.sampled_from(("kun", "other")), st.sampled_from(PATHS), CONTENTS),
    max_size=12,
)


def _disk(root: Path) -> dict[str, bytes | None]:
    return {p: (root / p).read_bytes() if (root / p).is_file() else None for p in PATHS}


def _put(root: Path, path: str, content: bytes | None) -> None:
    target = root / path
    if content is None:
        target.unlink(missing_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(PATHS), st.binary(max_size=4)), OPS, OPS)
def test_restore_and_undo_keep_the_invariants(
    start: dict[str, bytes], before: list[tuple[str, str, bytes | None]],
    window: list[tuple[str, str, bytes | None]],
) -> None:  # fmt: skip
    blobs = MemoryBlobStore("t")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for path, content in start.items():
            _put(root, path, content)
        for _, path, content in before:
            _put(root, path, content)
        at_cut = _disk(root)
        points: list[FileCheckpoint] = []
        last_kun: dict[str, bytes] = {}
        touched_by_others: set[str] = set()
        for who, path, content in window:
            if who == "kun":
                if content is None:
                    continue  # kun's file tools never delete
                old = _disk(root)[path]
                ref = None if old is None else blobs.put(old)
                _put(root, path, content)
                digest = hashlib.sha256(content).hexdigest()
                points.append(FileCheckpoint(path=path, before=ref, after_sha256=digest))
                last_kun[path] = content
            else:
                _put(root, path, content)
                touched_by_others.add(path)
        before_restore = _disk(root)
        done = restore(root, blobs, points)
        after_restore = _disk(root)
        for path in PATHS:
            if after_restore[path] != before_restore[path]:
                assert path in last_kun and before_restore[path] == last_kun[path]
            if path not in touched_by_others:
                assert after_restore[path] == at_cut[path]
        restore(root, blobs, list(done.restored))
        assert _disk(root) == before_restore
