"""``[observability]`` as ``kun config`` prints it: each value with where
it came from, resolved as :func:`kun.observe.settings.resolve` does (a
flag, then the environment, then the file; a switch is on if any of them
turns it on)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from kun.observe.settings import resolve

__all__ = ["config_lines"]

_TRUE = frozenset({"1", "true", "yes", "on"})


def config_lines(
    table: Any,
    written: Mapping[str, Any],
    found: Path | None,
    environ: Mapping[str, str],
    flags: Mapping[str, Any],
) -> list[str]:
    """``key = value  # source`` lines; ``written`` is the file's table as
    written (to tell a default from a value)."""
    settings = resolve(table, environ, flags)
    file = str(found) if found is not None else "default"
    if flags.get("log"):
        log_source = "--log-json" if flags["log"] == "file" else "--log-json-to"
    elif environ.get("KUN_LOG_JSON"):
        log_source = "$KUN_LOG_JSON"
    else:
        log_source = file if "log" in written else "default"
    content = _switch(
        [("--log-content", bool(flags.get("log_content"))), _env(environ, "KUN_LOG_CONTENT")],
        "log_content",
        written,
        file,
    )
    otel = _switch([_env(environ, "KUN_OTEL")], "otel", written, file)
    return [
        "",
        "[observability]",
        f"log = {_json(settings.log)}  # {log_source}{_where(settings.log)}",
        f"log_content = {_json(settings.content)}  # {content}",
        f"otel = {_json(settings.otel)}  # {otel}",
    ]


def _env(environ: Mapping[str, str], name: str) -> tuple[str, bool]:
    return f"${name}", environ.get(name, "").lower() in _TRUE


def _switch(
    overrides: list[tuple[str, bool]], key: str, written: Mapping[str, Any], file: str
) -> str:
    for source, on in overrides:
        if on:
            return source
    return file if key in written else "default"


def _where(log: str) -> str:
    if log == "file":
        return "; to <home>/logs/kun-YYYYMMDD.jsonl"
    return "" if log in ("off", "stderr") else "; appended to that file"


def _json(value: object) -> str:
    return msgspec.json.encode(value).decode()
