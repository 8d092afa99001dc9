"""Thread ids and the on-disk layout; ``kun.ids`` (its ids must be thread ids)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kun.errors import UserMistake
from kun.ids import new_id
from kun.store import InvalidThreadId, log_path, resolve_home, validate_thread_id


@pytest.mark.parametrize(
    ("thread_id", "rule"),
    [
        ("../x", "path separators"),
        ("a/b", "path separators"),
        ("a\\b", "path separators"),
        ("", "empty"),
        ("a" * 129, "at most 128"),
        ("a\x00b", "control characters"),
        ("a\nb", "control characters"),
        (".hidden", "start with '.'"),
        ("..", "start with '.'"),
        ("a..b", "'..'"),
        ("a b", "only letters"),
        ("ü", "only letters"),
        (7, "string"),
    ],
)
def test_unsafe_thread_ids_are_refused_naming_the_id_and_the_rule(
    thread_id: object, rule: str
) -> None:
    with pytest.raises(InvalidThreadId) as caught:
        validate_thread_id(thread_id)
    assert isinstance(caught.value, UserMistake)
    assert rule in str(caught.value)
    assert repr(thread_id) in str(caught.value)


@pytest.mark.parametrize("thread_id", ["a", "a" * 128, "thr_01h.x-y", "A.b", "x."])
def test_safe_thread_ids_pass(thread_id: str) -> None:
    assert validate_thread_id(thread_id) == thread_id


def test_home_precedence_is_argument_then_env_then_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KUN_HOME", str(tmp_path / "env"))
    assert resolve_home(tmp_path / "arg") == tmp_path / "arg"
    assert resolve_home(None) == tmp_path / "env"
    monkeypatch.setenv("KUN_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert resolve_home(None) == tmp_path / "user" / ".kun"
    assert resolve_home("~/k") == tmp_path / "user" / "k"


def test_the_log_lives_under_threads(tmp_path: Path) -> None:
    assert log_path(tmp_path, "thr_1") == tmp_path / "threads" / "thr_1" / "events.jsonl"
    with pytest.raises(InvalidThreadId):
        log_path(tmp_path, "../../etc")


def test_new_ids_are_valid_thread_ids_and_sort_in_creation_order() -> None:
    ids = [new_id("thr") for _ in range(2000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    for value in ids[:10]:
        assert validate_thread_id(value) == value
        assert len(value) == len("thr_") + 26
        assert value == value.lower()


@pytest.mark.parametrize("prefix", ["", "Thr", "a_b", "x" * 33])
def test_id_prefixes_are_checked(prefix: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        new_id(prefix)
