"""Export and import of kun bundles: a round trip changes nothing, a bundle
that is not exactly what was exported is refused naming the member, and an
import is all or nothing."""

from __future__ import annotations

import errno
import io
import tarfile
from pathlib import Path

import msgspec
import pytest

from kun.portable.bundle import export_thread
from kun.portable.errors import BundleRefused, ImportConflict
from kun.portable.unbundle import import_bundle
from kun.store.paths import LOG_NAME, blobs_dir, log_path, thread_dir
from kun.store.replay import replay_log
from tests.portable.conftest import BIG, GOLDEN, GOLDEN_ID, golden_thread, stored_thread
from tests.portable.marks import unmarked, unmarked_state


def _export(home: Path, tmp_path: Path, thread_id: str = "thr_source") -> Path:
    out = tmp_path / "t.kun.tar.gz"
    export_thread(home, thread_id, out)
    return out


def _members(bundle: Path) -> dict[str, bytes]:
    with tarfile.open(bundle) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def _rewrite(bundle: Path, members: dict[str, bytes], extra: list[tarfile.TarInfo] = ()) -> Path:  # type: ignore[assignment]
    out = bundle.with_name("altered.kun.tar.gz")
    with tarfile.open(out, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info, io.BytesIO(b"x" * info.size))
    return out


def _nothing_left(home: Path) -> None:
    assert not (home / "threads").exists() or not any((home / "threads").iterdir())
    assert not [p for p in home.iterdir() if p.name.startswith(".import-")]


def test_round_trip_gives_the_same_log_side_files_and_projection(tmp_path: Path) -> None:
    home, other = tmp_path / "a", tmp_path / "b"
    big = stored_thread(home)
    bundle = _export(home, tmp_path)
    result = import_bundle(other, bundle)
    assert (result.thread_id, result.outcome) == ("thr_source", "imported")
    assert unmarked(log_path(other, "thr_source")) == log_path(home, "thr_source").read_bytes()
    assert [p.read_bytes() for p in blobs_dir(other, "thr_source").iterdir()] == [big]
    assert unmarked_state(log_path(other, "thr_source")) == replay_log(log_path(home, "thr_source"))
    assert not [p for p in other.iterdir() if p.name.startswith(".import-")]


def test_manifest_names_every_file_with_its_hash(tmp_path: Path) -> None:
    stored_thread(tmp_path / "a")
    members = _members(_export(tmp_path / "a", tmp_path))
    manifest = msgspec.json.decode(members["manifest.json"])
    assert manifest["thread_id"] == "thr_source"
    assert manifest["events"] == manifest["last_seq"] > 10
    assert sorted(f["path"] for f in manifest["files"]) == sorted(set(members) - {"manifest.json"})
    assert sum(f["size"] for f in manifest["files"]) == sum(
        len(d) for n, d in members.items() if n != "manifest.json"
    )
    assert len(BIG) in [f["size"] for f in manifest["files"]]


def test_importing_the_same_bundle_twice_is_already_imported(tmp_path: Path) -> None:
    home = tmp_path / "a"
    stored_thread(home)
    bundle = _export(home, tmp_path)
    assert import_bundle(home, bundle).outcome == "already_imported"


def test_a_taken_id_with_other_content_is_refused_unless_as(tmp_path: Path) -> None:
    home, other = tmp_path / "a", tmp_path / "b"
    stored_thread(home)
    bundle = _export(home, tmp_path)
    stored_thread(other)
    with log_path(other, "thr_source").open("ab") as log:
        log.write(log_path(home, "thr_source").read_bytes().splitlines(keepends=True)[-1])
    with pytest.raises(ImportConflict, match="--as NEW_ID"):
        import_bundle(other, bundle)
    result = import_bundle(other, bundle, as_id="thr_copy")
    assert result.thread_id == "thr_copy"
    original = replay_log(log_path(home, "thr_source"))
    copy = unmarked_state(log_path(other, "thr_copy"))
    assert copy == msgspec.structs.replace(original, thread_id="thr_copy")
    assert (
        blobs_dir(other, "thr_copy") / next(blobs_dir(home, "thr_source").iterdir()).name
    ).is_file()


def test_as_rewrites_lines_that_name_their_thread(tmp_path: Path) -> None:
    home = tmp_path / "a"
    source = golden_thread(home)
    bundle = _export(home, tmp_path, GOLDEN_ID)
    import_bundle(home, bundle, as_id="thr_renamed")
    copy = log_path(home, "thr_renamed").read_bytes()
    assert GOLDEN_ID.encode() not in copy
    assert unmarked_state(log_path(home, "thr_renamed")) == msgspec.structs.replace(
        replay_log(source), thread_id="thr_renamed"
    )


@pytest.mark.parametrize("victim", ["events.jsonl", "blob"])
def test_a_tampered_member_is_refused_by_name(tmp_path: Path, victim: str) -> None:
    stored_thread(tmp_path / "a")
    bundle = _export(tmp_path / "a", tmp_path)
    members = _members(bundle)
    name = victim if victim in members else next(n for n in members if n.startswith("blobs/"))
    data = bytearray(members[name])
    data[5] ^= 1
    members[name] = bytes(data)
    home = tmp_path / "b"
    with pytest.raises(BundleRefused, match=f"{name}: SHA-256 differs"):
        import_bundle(home, _rewrite(bundle, members))
    _nothing_left(home)


def test_a_truncated_member_is_refused_by_size(tmp_path: Path) -> None:
    stored_thread(tmp_path / "a")
    bundle = _export(tmp_path / "a", tmp_path)
    members = _members(bundle)
    members["events.jsonl"] = members["events.jsonl"][:-1]
    with pytest.raises(BundleRefused, match=r"events.jsonl: \d+ bytes, the manifest says"):
        import_bundle(tmp_path / "b", _rewrite(bundle, members))


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("../evil", tarfile.REGTYPE, "points outside the bundle"),
        ("/etc/evil", tarfile.REGTYPE, "points outside the bundle"),
        ("blobs/../../evil", tarfile.REGTYPE, "points outside the bundle"),
        ("notes.txt", tarfile.REGTYPE, "unexpected member 'notes.txt'"),
        ("blobs/" + "a" * 64, tarfile.SYMTYPE, "is not a regular file"),
    ],
)
def test_members_a_bundle_never_has_are_refused(
    tmp_path: Path, name: str, kind: bytes, message: str
) -> None:
    stored_thread(tmp_path / "a")
    bundle = _export(tmp_path / "a", tmp_path)
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = 0 if kind == tarfile.SYMTYPE else 3
    info.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
    home = tmp_path / "b"
    with pytest.raises(BundleRefused, match=message):
        import_bundle(home, _rewrite(bundle, _members(bundle), [info]))
    _nothing_left(home)
    assert not (tmp_path / "evil").exists()


def test_a_listed_member_that_is_missing_is_refused(tmp_path: Path) -> None:
    stored_thread(tmp_path / "a")
    bundle = _export(tmp_path / "a", tmp_path)
    members = {n: d for n, d in _members(bundle).items() if not n.startswith("blobs/")}
    with pytest.raises(BundleRefused, match=r"blobs/[0-9a-f]{64}: missing"):
        import_bundle(tmp_path / "b", _rewrite(bundle, members))


def test_a_file_that_is_not_a_bundle_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.kun.tar.gz"
    junk.write_bytes(b"not an archive at all")
    with pytest.raises(BundleRefused, match="not a kun bundle"):
        import_bundle(tmp_path / "b", junk)


def test_export_refuses_to_overwrite_and_leaves_no_temp_file(tmp_path: Path) -> None:
    home = tmp_path / "a"
    stored_thread(home)
    out = _export(home, tmp_path)
    with pytest.raises(BundleRefused, match="file exists"):
        export_thread(home, "thr_source", out)
    export_thread(home, "thr_source", out, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", out.name]
    assert sorted(p.name for p in home.iterdir()) == ["threads"]


def test_export_takes_only_complete_lines(tmp_path: Path) -> None:
    home = tmp_path / "a"
    stored_thread(home)
    log = log_path(home, "thr_source")
    whole = log.read_bytes()
    with log.open("ab") as file:
        file.write(b'{"kind":"warning","message":"' + b"x" * 10_000)
    members = _members(_export(home, tmp_path))
    assert members["events.jsonl"] == whole
    assert thread_dir(home, "thr_source").joinpath(LOG_NAME).is_file()


@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.events.jsonl")), ids=lambda p: p.name)
def test_every_golden_log_round_trips_under_its_id_and_another(
    tmp_path: Path, golden: Path
) -> None:
    thread_id = msgspec.json.decode(golden.read_bytes().split(b"\n")[0])["thread_id"]
    home = tmp_path / "a"
    log = log_path(home, thread_id)
    log.parent.mkdir(parents=True)
    log.write_bytes(golden.read_bytes())
    bundle = _export(home, tmp_path, thread_id)
    import_bundle(tmp_path / "b", bundle)
    assert unmarked(log_path(tmp_path / "b", thread_id)) == golden.read_bytes()
    import_bundle(tmp_path / "b", bundle, as_id="thr_other")
    assert unmarked_state(log_path(tmp_path / "b", "thr_other")) == msgspec.structs.replace(
        replay_log(log), thread_id="thr_other"
    )


def test_a_failure_while_installing_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored_thread(tmp_path / "a")
    bundle = _export(tmp_path / "a", tmp_path)

    def fail(*_: object) -> None:
        raise OSError(errno.EIO, "disk on fire")

    monkeypatch.setattr("kun.portable.install.os.rename", fail)
    home = tmp_path / "b"
    with pytest.raises(OSError, match="disk on fire"):
        import_bundle(home, bundle)
    _nothing_left(home)
