"""A bundle that unpacks to more than the home has room for is refused
before anything is written: a small compressed upload cannot fill the
disk kun's logs live on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kun.portable.unbundle as unbundle
from kun.portable.bundle import export_thread
from kun.portable.errors import BundleRefused
from kun.portable.unbundle import import_bundle
from tests.portable.conftest import BIG, stored_thread


def test_a_bundle_larger_than_the_free_space_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored_thread(tmp_path / "a")
    bundle = tmp_path / "t.kun.tar.gz"
    export_thread(tmp_path / "a", "thr_source", bundle)
    assert (
        bundle.stat().st_size < len(BIG) // 10
    )  # it compresses well: the size of the upload says little
    real = shutil.disk_usage

    def little(path: object) -> object:
        return real(path)._replace(free=len(BIG) // 2)  # type: ignore[arg-type]

    monkeypatch.setattr(unbundle.shutil, "disk_usage", little)
    home = tmp_path / "b"
    with pytest.raises(BundleRefused, match="bytes free in the home"):
        import_bundle(home, bundle)
    assert not (home / "threads").exists() or not any((home / "threads").iterdir())
    monkeypatch.setattr(unbundle.shutil, "disk_usage", real)
    assert import_bundle(home, bundle).outcome == "imported"
