"""The environment and options a delegated turn gives the SDK: the seven
auth variables scrubbed, no host settings, kun's plan mode, cli_path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kun.model.delegated import AgentSdkSettings
from kun.runtime.agent_sdk.env import (
    AUTH_OVERRIDE_VARIABLES,
    OAUTH_TOKEN_VARIABLE,
    child_environment,
    sdk_env,
)
from kun.runtime.agent_sdk.options import sdk_options
from kun.runtime.context import TurnLimits

HOST = {
    "ANTHROPIC_API_KEY": "sk-ant-paid",
    "ANTHROPIC_AUTH_TOKEN": "bearer",
    "ANTHROPIC_BASE_URL": "https://proxy.example",
    "CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR": "3",
    "CLAUDE_CODE_USE_BEDROCK": "1",
    "CLAUDE_CODE_USE_VERTEX": "1",
    "CLAUDE_CODE_USE_FOUNDRY": "1",
    "PATH": "/usr/bin",
    "HOME": "/home/ana",
    "MY_SUBSCRIPTION": "oauth-token",
}


def test_exactly_seven_variables_are_scrubbed() -> None:
    assert len(AUTH_OVERRIDE_VARIABLES) == len(set(AUTH_OVERRIDE_VARIABLES)) == 7
    assert set(AUTH_OVERRIDE_VARIABLES) == {
        k for k in HOST if k.startswith(("ANTHROPIC", "CLAUDE"))
    }


def test_the_seven_are_emptied_whether_or_not_they_are_set_here() -> None:
    assert sdk_env({}) == dict.fromkeys(AUTH_OVERRIDE_VARIABLES, "")
    assert sdk_env(HOST) == dict.fromkeys(AUTH_OVERRIDE_VARIABLES, "")


def test_the_subscription_token_comes_from_the_named_variable() -> None:
    env = sdk_env(HOST, token_env="MY_SUBSCRIPTION")
    assert env[OAUTH_TOKEN_VARIABLE] == "oauth-token"
    assert OAUTH_TOKEN_VARIABLE not in sdk_env(HOST, token_env="UNSET_VARIABLE")
    assert OAUTH_TOKEN_VARIABLE not in sdk_env({"EMPTY": ""}, token_env="EMPTY")


def test_the_child_sees_none_of_the_seven_and_everything_else() -> None:
    child = child_environment(HOST, sdk_env(HOST, token_env="MY_SUBSCRIPTION"))
    assert not set(AUTH_OVERRIDE_VARIABLES) & set(child)
    assert child["PATH"] == "/usr/bin" and child["HOME"] == "/home/ana"
    assert child[OAUTH_TOKEN_VARIABLE] == "oauth-token"


def _options(**overrides: object) -> dict[str, object]:
    settings = AgentSdkSettings(
        provider="claude", model="claude-sonnet-4-5", cli_path="/opt/fake/claude"
    )
    fields: dict[str, object] = {
        "workspace": Path("/work/ws"),
        "environ": HOST,
        "limits": TurnLimits(max_steps=12, cost_budget_usd=2.5),
        "plan_mode": False,
        "resume": None,
        "system_append": "# AGENTS.md\nbe brief",
        "mcp_servers": {"kun": object()},
        "can_use_tool": print,
    }
    fields.update(overrides)
    return sdk_options(settings, **fields)  # type: ignore[arg-type]


def test_options_load_no_host_settings_and_ask_kun_for_every_permission() -> None:
    options = _options()
    assert options["setting_sources"] == []
    assert options["cli_path"] == "/opt/fake/claude"
    assert options["model"] == "claude-sonnet-4-5"
    assert options["cwd"] == "/work/ws"
    assert options["env"] == dict.fromkeys(AUTH_OVERRIDE_VARIABLES, "")
    assert options["permission_mode"] == "default"
    assert options["can_use_tool"] is print
    assert options["disallowed_tools"] == ["AskUserQuestion"]
    assert options["system_prompt"] == {
        "type": "preset",
        "preset": "claude_code",
        "append": "# AGENTS.md\nbe brief",
    }
    assert options["include_partial_messages"] is True
    assert (options["max_turns"], options["max_budget_usd"]) == (12, 2.5)
    assert "tools" not in options and "resume" not in options


def test_plan_mode_switches_off_every_built_in_tool_not_the_sdks_plan_mode() -> None:
    options = _options(plan_mode=True)
    assert options["tools"] == []
    assert options["permission_mode"] == "default"


def test_a_resumed_turn_names_its_session() -> None:
    assert _options(resume="sess-1")["resume"] == "sess-1"


def test_the_sdk_takes_these_options() -> None:
    if importlib.util.find_spec("claude_agent_sdk") is None:
        pytest.skip("the kun[claude] extra is not installed")
    from claude_agent_sdk import ClaudeAgentOptions

    options = ClaudeAgentOptions(**_options(plan_mode=True, resume="s"))  # type: ignore[arg-type]
    assert options.setting_sources == [] and options.tools == []
    assert str(options.cli_path) == "/opt/fake/claude"


@pytest.mark.parametrize(
    ("effort", "key", "value"),
    [
        ("high", "effort", "high"),
        ("xhigh", "effort", "xhigh"),
        ("off", "thinking", {"type": "disabled"}),
    ],
)
def test_the_turns_effort_becomes_the_sdks(effort: str, key: str, value: object) -> None:
    settings = AgentSdkSettings(provider="claude", model="claude-opus-4-1", effort=effort)
    options = sdk_options(
        settings,
        workspace=Path("/w"),
        environ={},
        limits=TurnLimits(),
        plan_mode=False,
        resume=None,
        system_append=None,
        mcp_servers={},
        can_use_tool=None,
    )
    assert options[key] == value
    assert "system_prompt" in options and "append" not in options["system_prompt"]


def test_an_effort_the_sdk_does_not_know_is_left_to_it() -> None:
    settings = AgentSdkSettings(provider="claude", model="claude-opus-4-1", effort="on")
    options = sdk_options(
        settings,
        workspace=Path("/w"),
        environ={},
        limits=TurnLimits(max_steps=None),
        plan_mode=False,
        resume=None,
        system_append=None,
        mcp_servers={},
        can_use_tool=None,
    )
    assert "effort" not in options and "thinking" not in options and "max_turns" not in options
