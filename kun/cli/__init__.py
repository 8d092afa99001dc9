"""The command line: the click group lives in :mod:`kun.cli.main`, each
family of commands in a small module beside it, and what the terminal shows
in :mod:`kun.cli.terminal`. ``kun.cli:main`` is the console script."""

from kun.cli.main import cli, main

__all__ = ["cli", "main"]
