"""What a TurnService learns from configuration to decide compaction: each
model's context window and ``[runtime] compact_at``."""

from __future__ import annotations

from kun.app.windows import compact_at, context_windows
from kun.config import parse_config
from kun.domain.compaction import DEFAULT_COMPACT_AT

TOML = """
[runtime]
compact_at = 0.6

[providers.local]
base_url = "http://localhost:11434/v1"
default_model = "qwen3:8b"
[providers.local.models."qwen3:8b"]
max_context_tokens = 40960
"""


def test_a_configured_window_and_threshold_reach_the_service() -> None:
    config = parse_config(TOML, "kun.toml")
    windows = context_windows(config)
    assert windows("local", "qwen3:8b") == 40960
    assert windows("local", "another-model") is None
    assert windows("scripted", "scripted") is None
    assert compact_at(config) == 0.6


def test_without_a_setting_the_default_threshold_applies() -> None:
    config = parse_config(TOML.replace("compact_at = 0.6", ""), "kun.toml")
    assert compact_at(config) == DEFAULT_COMPACT_AT


def test_kun_config_shows_the_threshold_and_where_it_came_from() -> None:
    from kun.app.overrides import RuntimeFlags
    from kun.app.settings import resolve_runtime

    config = parse_config(TOML, "kun.toml")
    assert resolve_runtime(config, RuntimeFlags())["compact_at"].value == 0.6
    plain = parse_config(TOML.replace("compact_at = 0.6", ""), "kun.toml")
    resolved = resolve_runtime(plain, RuntimeFlags())["compact_at"]
    assert (resolved.value, resolved.source) == (DEFAULT_COMPACT_AT, "default")
