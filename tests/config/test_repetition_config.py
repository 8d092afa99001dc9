"""The repeated-reply thresholds (SPEC §7.2) are ``[runtime]`` keys: read and
checked with the file, shown by ``kun config`` with their source, and handed to
the loop through :func:`kun.app.settings.runtime_settings`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kun.app.settings import runtime_settings
from kun.config import load_config
from kun.domain.repetition import RepetitionSettings
from kun.entry import cli


def _config(tmp_path: Path, runtime: str) -> Path:
    config = tmp_path / "kun.toml"
    config.write_text(
        'default_provider = "fake"\n\n[providers.fake]\n'
        'base_url = "http://127.0.0.1:9/v1"\nendpoint_format = "chat_completions"\n'
        'default_model = "fake-model"\napi_key_env = "FAKE_KEY"\n\n'
        f"[runtime]\n{runtime}"
    )
    return config


def test_the_defaults_are_the_spec_s() -> None:
    assert RepetitionSettings() == RepetitionSettings(dice=0.85, min_chars=12, max_repeats=3)


def test_the_file_s_values_reach_the_settings(tmp_path: Path) -> None:
    path = _config(tmp_path, "repetition_dice = 0.9\nrepetition_max_repeats = 0\n")
    settings = runtime_settings(load_config(path, home=tmp_path, environ={}))
    assert settings.repetition == RepetitionSettings(dice=0.9, min_chars=12, max_repeats=0)
    assert settings.sources["repetition_dice"] == str(path)
    assert settings.sources["repetition_min_chars"] == "default"


def test_kun_config_shows_them_with_their_source(tmp_path: Path) -> None:
    path = _config(tmp_path, "repetition_min_chars = 20\n")
    result = CliRunner().invoke(cli, ["config", "--config", str(path), "--home", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    lines = {line.split(" = ")[0]: line for line in result.stdout.splitlines() if " = " in line}
    assert lines["repetition_min_chars"].startswith("repetition_min_chars = 20 ")
    assert lines["repetition_min_chars"].endswith(f"# {path}")
    assert lines["repetition_dice"].endswith("# default") and "0.85" in lines["repetition_dice"]
    assert lines["repetition_max_repeats"].endswith("# default")


@pytest.mark.parametrize(
    "runtime",
    [
        "repetition_dice = 0\n",
        "repetition_dice = 1.5\n",
        'repetition_dice = "high"\n',
        "repetition_min_chars = 1\n",
        "repetition_max_repeats = -1\n",
    ],
)
def test_an_out_of_range_threshold_is_one_error_line(tmp_path: Path, runtime: str) -> None:
    path = _config(tmp_path, runtime)
    result = CliRunner().invoke(cli, ["config", "--config", str(path)])
    key = runtime.split(" = ")[0]
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"kun: error: {path}: runtime.{key}: expected")
