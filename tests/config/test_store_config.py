"""``[store] url``: the database a home's commands work on, chosen after
``--store`` and before the home; a URL with a password in it is refused
in one line that does not repeat it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kun.app.stores import NotAStoreUrl, chosen_store
from kun.config import ConfigError, load_config, parse_config

URL = "postgresql://kun@db.example:5432/threads"


def _home(tmp_path: Path, text: str) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "kun.toml").write_text(text)
    return home


def test_the_store_url_is_read_from_the_home_file(tmp_path: Path) -> None:
    home = _home(tmp_path, f'[store]\nurl = "{URL}"\n')
    config = load_config(home=home, cwd=tmp_path, environ={"PATH": os.defpath})
    assert config.store.url == URL
    assert parse_config(b"", "x").store.url is None


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://kun:hunter2@db.example/threads",
        "postgres://kun:hunter2@db.example:5432/threads",
        "postgresql://kun@db.example/threads?sslmode=require&password=hunter2",
    ],
)
def test_a_password_in_the_url_is_refused_without_repeating_it(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(f'[store]\nurl = "{url}"\n', "kun.toml")
    message = str(caught.value)
    assert "hunter2" not in message and "\n" not in message
    assert message.startswith("kun.toml: store.url: a password is not taken from kun.toml")
    assert "$PGPASSWORD" in message and "~/.pgpass" in message


def test_a_store_url_must_name_postgresql() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config('[store]\nurl = "mysql://db.example/threads"\n', "kun.toml")
    assert "store.url: expected a URL such as postgresql://" in str(caught.value)


def test_store_flag_over_the_config_over_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KUN_CONFIG", raising=False)
    bare = tmp_path / "bare"
    bare.mkdir()
    assert chosen_store(None, bare) is None
    home = _home(tmp_path, f'[store]\nurl = "{URL}"\n')
    assert chosen_store(None, home) == URL
    given = "postgresql://other@elsewhere/db"
    assert chosen_store(given, home) == given
    with pytest.raises(NotAStoreUrl):
        chosen_store("/not/a/database", home)


def test_an_untrusted_project_file_cannot_choose_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUN_CONFIG", raising=False)
    project = tmp_path / "ws"
    project.mkdir()
    (project / "kun.toml").write_text(f'[store]\nurl = "{URL}"\n')
    monkeypatch.chdir(project)
    with pytest.raises(ConfigError) as caught:
        chosen_store(None, tmp_path / "home")
    assert "store.url is not taken from a kun.toml found in the project" in str(caught.value)


def test_a_project_file_without_a_store_table_is_not_judged_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUN_CONFIG", raising=False)
    project = tmp_path / "ws"
    project.mkdir()
    text = '# the store is the home\n[mcp.helper]\ncommand = "sh"\n'
    (project / "kun.toml").write_text(text)
    monkeypatch.chdir(project)
    assert chosen_store(None, tmp_path / "home") is None
