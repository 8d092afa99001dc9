"""A bundle imported, continued in kun, then imported again: the same
bundle is already imported (the kun turns counted, nothing written), a
bundle of the source thread grown since is refused saying how many events
it gained, and ``--replace`` moves the thread to the trash first."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from kun.contracts.events import ThreadUpdated
from kun.portable.bundle import export_thread
from kun.portable.errors import ImportChanged
from kun.portable.unbundle import import_bundle
from kun.store.jsonl import JsonlEventStore
from kun.store.paths import log_path
from kun.store.replay import replay_log
from tests.portable.conftest import stored_thread
from tests.portable.kun_turns import continue_in_kun

THREAD = "thr_source"


def _rebind(home: Path, workspace: Path) -> None:
    """Point the thread's workspace at a folder that exists here."""

    async def append() -> None:
        async with JsonlEventStore(home) as store:
            last = replay_log(log_path(home, THREAD)).last_seq
            event = ThreadUpdated(seq=last + 1, at=1, thread_id=THREAD, workspace=str(workspace))
            await store.append(THREAD, [event], expected_seq=last)

    anyio.run(append)


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Home ``a`` holding the source thread, its bundle, and home ``b``
    where it was imported and then ran 2 turns."""
    a, b, workspace = tmp_path / "a", tmp_path / "b", tmp_path / "ws"
    workspace.mkdir()
    stored_thread(a)
    _rebind(a, workspace)
    bundle = tmp_path / "t.kun.tar.gz"
    export_thread(a, THREAD, bundle)
    import_bundle(b, bundle)
    continue_in_kun(b, THREAD, 2)
    return a, bundle, b


def test_the_same_bundle_is_already_imported(tmp_path: Path) -> None:
    _, bundle, b = _setup(tmp_path)
    log = log_path(b, THREAD).read_bytes()
    again = import_bundle(b, bundle)
    assert (again.outcome, again.detail) == (
        "already_imported",
        "the thread has 2 turns run in kun since",
    )
    assert log_path(b, THREAD).read_bytes() == log


def test_a_grown_bundle_is_refused_then_replaces_into_the_trash(tmp_path: Path) -> None:
    a, _, b = _setup(tmp_path)
    before = log_path(b, THREAD).read_bytes()
    exported = len(log_path(a, THREAD).read_bytes().splitlines())
    continue_in_kun(a, THREAD, 1)
    added = len(log_path(a, THREAD).read_bytes().splitlines()) - exported
    grown = tmp_path / "grown.kun.tar.gz"
    export_thread(a, THREAD, grown)
    with pytest.raises(ImportChanged) as refused:
        import_bundle(b, grown)
    message = str(refused.value)
    assert f"the bundle has {added} new events since it was imported at " in message, message
    assert "the kun thread has 2 turns run in kun since" in message
    assert log_path(b, THREAD).read_bytes() == before
    replaced = import_bundle(b, grown, replace_changed=True)
    assert replaced.outcome == "replaced" and replaced.trashed is not None
    assert (replaced.trashed / "events.jsonl").read_bytes() == before


def test_a_bundle_of_another_thread_of_that_id_differs(tmp_path: Path) -> None:
    _, _, b = _setup(tmp_path)
    other = tmp_path / "other"
    stored_thread(other)
    different = tmp_path / "different.kun.tar.gz"
    export_thread(other, THREAD, different)
    with pytest.raises(ImportChanged, match="differs from what was imported at"):
        import_bundle(b, different)
