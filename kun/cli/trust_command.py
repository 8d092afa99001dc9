"""``kun trust``: let a project's ``kun.toml`` use every key
(:mod:`kun.config.trust` says why a project file needs it)."""

from __future__ import annotations

from pathlib import Path

import click

from kun.cli.options import home_option

__all__ = ["trust_command"]


@click.command("trust")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--revoke", is_flag=True, help="Forget PATH: its keys are refused again.")
@click.option("--list", "as_list", is_flag=True, help="List the trusted files.")
@home_option
def trust_command(path: Path | None, revoke: bool, as_list: bool, home: Path | None) -> None:
    """Trust PATH (default ./kun.toml) as it is now, after reading it: its
    MCP servers, provider URLs and sandbox widening are then taken. Any
    change to the file un-trusts it."""
    from kun.app.home import resolve_home
    from kun.config import CONFIG_NAME, trust
    from kun.errors import UserMistake

    root = resolve_home(home)
    if as_list:
        if path is not None or revoke:
            raise UserMistake("kun trust --list takes no PATH and no --revoke")
        _list(root)
        return
    target = (path or Path(CONFIG_NAME)).absolute()
    if revoke:
        if path is None:
            raise UserMistake("kun trust --revoke needs the PATH to forget")
        if trust.revoke(root, target):
            click.echo(f"{target} is no longer trusted")
        else:
            click.echo(f"{target} was not trusted; nothing to revoke")
        return
    if not target.is_file():
        what = "is not a file" if target.exists() else "does not exist"
        raise UserMistake(f"{target} {what}; kun trust names a kun.toml to trust")
    record = trust.trust(root, target)
    click.echo(
        f"trusted {record.path} (sha256 {record.sha256[:12]}); any change to it un-trusts it"
    )


def _list(root: Path) -> None:
    from kun.config import trust

    records = trust.trusted_files(root)
    if not records:
        click.echo("no project kun.toml is trusted")
    for record in records:
        where = Path(record.path)
        try:
            same = trust.digest(where.read_bytes()) == record.sha256
            state = "trusted" if same else "changed since trusted: not trusted"
        except OSError:
            state = "missing"
        click.echo(f"{record.path}  {state}")
