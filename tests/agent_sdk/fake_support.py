"""Helpers for driving code that uses ``claude_agent_sdk`` through the fake CLI.

Why: kun's agent-sdk engine spawns ``claude``; these helpers point it at
:mod:`tests.agent_sdk.fake_claude` instead and hand back the environment that
tells the fake what to play and where to log. Pass the returned ``env`` as
``ClaudeAgentOptions(env=...)`` (or to whatever builds the options) and
``fake_cli_path()`` as ``cli_path``; the scenario format is in the fake's
module docstring.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

FAKE_CLAUDE = Path(__file__).with_name("fake_claude.py")
SCENARIO_ENV = "KUN_FAKE_CLAUDE_SCENARIO"
LOG_ENV = "KUN_FAKE_CLAUDE_LOG"

Turn = Sequence[Mapping[str, Any]] | Mapping[str, Any]


def fake_cli_path() -> Path:
    """The fake ``claude``, made executable (a checkout may drop the mode bit)."""
    mode = FAKE_CLAUDE.stat().st_mode
    wanted = mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
    if mode != wanted:
        FAKE_CLAUDE.chmod(wanted)
    return FAKE_CLAUDE


def write_scenario(tmp_path: Path, turns: Sequence[Turn], *, name: str = "fake") -> dict[str, str]:
    """Write ``turns`` as a scenario under ``tmp_path``; return the env that selects it.

    Each turn answers one prompt: a list of steps, or ``{"steps": [...],
    "usage": {...}, "total_cost_usd": ...}``. The env also names a log file
    (read it back with :func:`read_log`).
    """
    scenario = tmp_path / f"{name}-scenario.json"
    scenario.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
    log = tmp_path / f"{name}-log.jsonl"
    return {SCENARIO_ENV: os.fspath(scenario), LOG_ENV: os.fspath(log)}


def read_log(env: Mapping[str, str]) -> list[dict[str, Any]]:
    """One record per fake run that has exited, oldest first (argv, env names, prompts...)."""
    log = Path(env[LOG_ENV])
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
