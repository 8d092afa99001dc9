"""``kun config`` shows ``[observability]`` as it is in force and where
each value came from: a flag, the environment, the file or the default."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kun.entry import cli


def _observability(output: str) -> list[str]:
    lines = output.splitlines()
    start = lines.index("[observability]")
    return [" ".join(line.split()) for line in lines[start + 1 : start + 4]]


def test_kun_config_says_where_observability_comes_from(tmp_path: Path) -> None:
    config = tmp_path / "kun.toml"
    config.write_text('[observability]\nlog = "file"\n')
    runner = CliRunner()
    common = ["config", "--config", str(config), "--home", str(tmp_path / "home")]
    plain = runner.invoke(cli, common, env={"KUN_OTEL": "", "KUN_LOG_JSON": ""})
    assert plain.exit_code == 0, plain.output
    assert _observability(plain.output) == [
        f'log = "file" # {config}; to <home>/logs/kun-YYYYMMDD.jsonl',
        "log_content = false # default",
        "otel = false # default",
    ]
    flagged = runner.invoke(
        cli, [*common, "--log-json-to", "stderr", "--log-content"], env={"KUN_OTEL": "1"}
    )
    assert _observability(flagged.output) == [
        'log = "stderr" # --log-json-to',
        "log_content = true # --log-content",
        "otel = true # $KUN_OTEL",
    ]
    from_env = runner.invoke(cli, common, env={"KUN_LOG_JSON": "/var/log/kun.jsonl"})
    assert _observability(from_env.output)[0] == (
        'log = "/var/log/kun.jsonl" # $KUN_LOG_JSON; appended to that file'
    )
