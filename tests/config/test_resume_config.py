"""The goal resume backoff (SPEC §7.4) is ``[runtime]`` keys: read and checked
with the file (the cap not below the base), shown by ``kun config`` with their
source, and handed to every service through :func:`kun.app.session.open_service`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kun.app.session import resume_settings
from kun.config import load_config
from kun.domain.resume_policy import ResumeSettings
from kun.entry import cli
from tests.config.test_repetition_config import _config


def test_the_defaults_are_the_spec_s() -> None:
    assert ResumeSettings() == ResumeSettings(base_seconds=2, cap_seconds=60, max_attempts=5)


def test_the_file_s_values_reach_the_settings(tmp_path: Path) -> None:
    path = _config(tmp_path, "goal_resume_base_seconds = 0.5\ngoal_resume_max_attempts = 2\n")
    settings = resume_settings(load_config(path, home=tmp_path, environ={}))
    assert settings == ResumeSettings(base_seconds=0.5, cap_seconds=60, max_attempts=2)
    assert resume_settings(None) == ResumeSettings()


def test_kun_config_shows_them_with_their_source(tmp_path: Path) -> None:
    path = _config(tmp_path, "goal_resume_max_seconds = 30\n")
    result = CliRunner().invoke(cli, ["config", "--config", str(path), "--home", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    lines = {line.split(" = ")[0]: line for line in result.stdout.splitlines() if " = " in line}
    assert lines["goal_resume_max_seconds"].startswith("goal_resume_max_seconds = 30")
    assert lines["goal_resume_max_seconds"].endswith(f"# {path}")
    assert lines["goal_resume_base_seconds"].startswith("goal_resume_base_seconds = 2")
    assert lines["goal_resume_base_seconds"].endswith("# default")
    assert lines["goal_resume_max_attempts"].startswith("goal_resume_max_attempts = 5 ")
    assert lines["goal_resume_max_attempts"].endswith("# default")


@pytest.mark.parametrize(
    ("runtime", "key", "said"),
    [
        ("goal_resume_base_seconds = 0\n", "goal_resume_base_seconds", "expected"),
        ("goal_resume_max_seconds = -1\n", "goal_resume_max_seconds", "expected"),
        ('goal_resume_max_seconds = "1m"\n', "goal_resume_max_seconds", "expected"),
        ("goal_resume_max_attempts = 0\n", "goal_resume_max_attempts", "expected"),
        ("goal_resume_max_attempts = 1.5\n", "goal_resume_max_attempts", "expected"),
        (
            "goal_resume_base_seconds = 10\ngoal_resume_max_seconds = 5\n",
            "goal_resume_max_seconds",
            "expected at least runtime.goal_resume_base_seconds (10)",
        ),
        (
            "goal_resume_max_seconds = 1\n",
            "goal_resume_max_seconds",
            "expected at least runtime.goal_resume_base_seconds (2, kun's default)",
        ),
        (
            "goal_resume_base_seconds = 90\n",
            "goal_resume_base_seconds",
            "expected at most runtime.goal_resume_max_seconds (60, kun's default)",
        ),
    ],
)
def test_a_bad_value_is_one_error_line_naming_the_key(
    tmp_path: Path, runtime: str, key: str, said: str
) -> None:
    path = _config(tmp_path, runtime)
    result = CliRunner().invoke(cli, ["config", "--config", str(path)])
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"kun: error: {path}: runtime.{key}: {said}")


def test_an_equal_base_and_cap_is_fine(tmp_path: Path) -> None:
    path = _config(tmp_path, "goal_resume_base_seconds = 5\ngoal_resume_max_seconds = 5\n")
    config = load_config(path, home=tmp_path, environ={})
    assert resume_settings(config).cap_seconds == 5
