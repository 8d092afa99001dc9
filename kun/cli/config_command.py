"""``kun config``: the configuration in force, and where each value came from.

It prints TOML with the source of each value in a comment after it: a flag
(``--max-steps``), an environment variable (``$KUN_HOME``,
``$ANTHROPIC_API_KEY``), the file (its path), or ``default``. It resolves
exactly as the commands that run turns do (:func:`kun.config.load_config`,
:func:`kun.app.settings.resolve_runtime`), so what it prints is what a turn
gets. A secret is never printed: an API key shows as the name of its
variable and whether that is set; a proxy's password is masked; headers
show by name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, get_args

import click

from kun.cli.flags import runtime_flags, runtime_options
from kun.contracts.threads import ApprovalPolicy

__all__ = ["config_command"]

_SHOWN_CHARS = 40


@click.command("config")
@click.option(
    "--approval",
    type=click.Choice(get_args(ApprovalPolicy)),
    default=None,
    help="As kun run's, to see it apply.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="kun.toml to use (default: $KUN_CONFIG, ./kun.toml, $KUN_HOME/kun.toml).",
)
@runtime_options
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="kun home directory (default: $KUN_HOME, else ~/.kun).",
)
def config_command(approval: str | None, config_path: Path | None, home: Path | None) -> None:
    """Print the configuration in force and where each value came from
    (a flag, an environment variable, the file, or kun's default). Secrets
    show as the name of their variable, never their value."""
    click.echo("\n".join(render_config(config_path, home, approval)))


def render_config(
    config_path: Path | None,
    home: Path | None,
    approval: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[str]:
    import msgspec

    from kun.app.home import resolve_home
    from kun.app.settings import resolve_runtime
    from kun.config import find_config, load_config
    from kun.observe.describe import config_lines as observe_lines
    from kun.observe.flags import given_flags

    env = os.environ if environ is None else environ
    root = resolve_home(home)
    found = find_config(config_path, home=root, environ=env)
    config = load_config(config_path, home=root, environ=env)
    raw: dict[str, Any] = msgspec.toml.decode(found.read_bytes()) if found is not None else {}
    lines = [
        "# kun config: the configuration in force; after each value, where it came from",
        _row("home", str(root), _home_source(home, env)),
        _row("config_file", str(found) if found else None, _file_source(config_path, found, env)),
    ]
    trust_row = None
    if found is not None:
        trust_row = _trust_row(found, root, config_path is not None or bool(env.get("KUN_CONFIG")))
        lines.append(trust_row)
    floored = trust_row is not None and trust_row.startswith("config_trusted = false")
    default_source = str(found) if raw.get("default_provider") else "default (first provider)"
    if found is None:
        default_source = "environment (first key set)"
    lines.append(_row("default_provider", config.default_provider, default_source))
    lines += ["", "[runtime]"]
    for key, sourced in resolve_runtime(config, runtime_flags(approval)).items():
        lines.append(_row(key, sourced.value, sourced.source))
    bash, written = config.tools.bash, raw.get("tools", {}).get("bash", {})
    lines += ["", "[tools.bash]"]
    for key in ("env_allow", "sandbox", "writable", "network"):
        value = getattr(bash, key)
        source = str(found) if key in written else "default"
        if floored and key != "env_allow":
            source = f"{source}, the home's kun.toml as a floor (the file is not trusted)"
        lines.append(_row(key, list(value) if isinstance(value, tuple) else value, source))
    lines += observe_lines(
        config.observability, raw.get("observability", {}), found, env, given_flags()
    )
    for name, provider in config.providers.items():
        lines += ["", f"[providers.{_key(name)}]", *_provider(provider, raw, found, env)]
    if config.mcp:
        from kun.mcp.describe import config_lines

        lines += config_lines(config.mcp, raw.get("mcp", {}), str(found), env, config.tools.bash)
    return _aligned(lines)


def _aligned(lines: list[str]) -> list[str]:
    """The source comments of each table in one column."""
    out: list[str] = []
    block: list[tuple[str, str]] = []

    def flush() -> None:
        width = max((len(value) for value, _ in block), default=0)
        out.extend(f"{value.ljust(width)}  # {source}" for value, source in block)
        block.clear()

    for line in lines:
        value, marker, source = line.partition("  # ")
        if marker and not line.startswith("# kun"):
            block.append((value, source))
            continue
        flush()
        out.append(line)
    flush()
    return out


def _provider(
    provider: Any, raw: dict[str, Any], found: Path | None, env: Mapping[str, str]
) -> Iterator[str]:
    from kun.config.schema import _mask_password, known_provider

    table = raw.get("providers", {}).get(provider.name, {})
    known = known_provider(provider.catalog)
    fallback = f"default ({known.name})" if known else "default"
    if provider.kind == "agent-sdk":
        yield from _agent_sdk(provider, table, found, env)
        return
    if found is None and known is not None:
        base_source = f"${known.base_url_env}" if env.get(known.base_url_env) else fallback
        yield _row("base_url", provider.base_url, base_source)
    else:
        yield _row("base_url", provider.base_url, _in(table, "base_url", found, fallback))
    for key in ("endpoint_format", "default_model", "catalog"):
        yield _row(key, getattr(provider, key), _in(table, key, found, fallback))
    variable = provider.api_key_env
    if variable is not None:
        state = "set" if env.get(variable) else "NOT set"
        source = _in(table, "api_key_env", found, fallback)
        yield _row("api_key_env", variable, f"{source}; ${variable} is {state}, value not shown")
    else:
        yield "# no API key (a server that needs none)"
    if provider.proxy is not None:
        yield _row("proxy", _mask_password(provider.proxy), str(found))
    for key in ("idle_timeout", "connect_timeout", "dialect"):
        if getattr(provider, key) is not None:
            yield _row(key, getattr(provider, key), str(found))
    if provider.web_search:
        yield _row("web_search", True, str(found))
    if provider.headers:
        yield f"# headers: {', '.join(provider.headers)} (values not shown)"
    if provider.models:
        yield f"# models with settings: {', '.join(provider.models)}"


def _agent_sdk(
    provider: Any, table: dict[str, Any], found: Path | None, env: Mapping[str, str]
) -> Iterator[str]:
    """An ``agent-sdk`` provider: the Claude Agent SDK runs its turns, so it
    has no URL or wire format to show, but an executable and a token."""
    yield _row("kind", provider.kind, str(found))
    yield _row(
        "default_model", provider.default_model, _in(table, "default_model", found, "default")
    )
    yield _row(
        "cli_path",
        provider.cli_path or "the SDK's own claude",
        _in(table, "cli_path", found, "default"),
    )
    variable = provider.api_key_env
    if variable is not None:
        state = "set" if env.get(variable) else "NOT set"
        yield _row("api_key_env", variable, f"{found}; ${variable} is {state}, value not shown")
    else:
        yield "# no token variable: claude uses the login it keeps"


def _in(table: dict[str, Any], key: str, found: Path | None, fallback: str) -> str:
    return str(found) if key in table else fallback


def _where(raw: dict[str, Any], found: Path | None, key: str) -> str:
    return str(found) if key in raw else "default"


def _home_source(home: Path | None, env: Mapping[str, str]) -> str:
    if home is not None:
        return "--home"
    return "$KUN_HOME" if env.get("KUN_HOME") else "default"


def _file_source(given: Path | None, found: Path | None, env: Mapping[str, str]) -> str:
    if given is not None:
        return "--config"
    if env.get("KUN_CONFIG"):
        return "$KUN_CONFIG"
    if found is None:
        return "none found: providers come from the environment's API keys"
    return "./kun.toml" if found.parent == Path.cwd() else "the home's kun.toml"


def _trust_row(found: Path, root: Path, named: bool) -> str:
    """Whether the file may use every key (:mod:`kun.config.trust`)."""
    import shlex

    from kun.config import CONFIG_NAME
    from kun.config.trust import is_trusted

    in_home = root / CONFIG_NAME
    if named or (in_home.is_file() and found.samefile(in_home)):
        return _row("config_trusted", True, "named on purpose or kun's home: always trusted")
    if is_trusted(root, found, found.read_bytes()):
        return _row("config_trusted", True, "kun trust (any change to the file un-trusts it)")
    return _row(
        "config_trusted",
        False,
        "found in the project: no MCP server, provider URL or key, or sandbox widening "
        f"until `kun trust {shlex.quote(str(found))}`; the home's [tools.bash] is a floor",
    )


def _row(key: str, value: Any, source: str) -> str:
    if value is None:
        return f"# {_key(key)} is not set  # {source}"
    if key == "system_prompt" and len(value) > _SHOWN_CHARS:
        source += f"; {len(value):,} characters, the first {_SHOWN_CHARS} shown"
        value = value[:_SHOWN_CHARS] + "..."
    return f"{_key(key)} = {_value(value)}  # {source}"


def _key(name: str) -> str:
    from kun.config import key_path

    return key_path([name])


def _value(value: Any) -> str:
    import msgspec

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return msgspec.json.encode(value).decode()
