"""Which store a command means, and opening it.

A command works on the JSONL home (``--home``, ``$KUN_HOME``, ``~/.kun``)
unless it is told of a database: ``--store URL`` on its command line, else
``[store] url`` in the configuration it reads (:func:`configured_url`; a
project's ``kun.toml`` may set it only once trusted, and never with a
password in it). The home stays where kun keeps what belongs to this
machine (its configuration, trust records, uploads, caches) whichever
store holds the threads.

psycopg is imported only when a database is opened (:func:`open_store`), so
the commands that never use one do not pay for it; without the
``kun[postgres]`` extra that is one line, :class:`PostgresMissing`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kun.errors import UserMistake

if TYPE_CHECKING:
    from kun.store.port import EventStore

__all__ = [
    "HomeOnly",
    "NotAStoreUrl",
    "PostgresMissing",
    "chosen_store",
    "configured_url",
    "is_store_url",
    "open_store",
    "reach",
    "shown_url",
]

SCHEMES = ("postgresql://", "postgres://")


class HomeOnly(UserMistake):
    """What was asked works on a kun home, and the threads are in a database."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(f"{what} works on a kun home, not on a database (--store, [store] url)")


class PostgresMissing(UserMistake):
    """A database named without the ``kun[postgres]`` extra installed."""

    def __init__(self) -> None:
        super().__init__("a PostgreSQL store needs psycopg: pip install 'kun[postgres]'")


class NotAStoreUrl(UserMistake):
    """``--store`` given something other than a PostgreSQL URL."""

    def __init__(self, option: str) -> None:
        super().__init__(f"{option}: expected a URL such as postgresql://user@host/db")


def is_store_url(text: str) -> bool:
    """Whether ``text`` names a database kun can keep threads in."""
    return text.startswith(SCHEMES)


def configured_url(home: Path, config: Path | None = None) -> str | None:
    """``[store] url`` of the configuration the command reads (``config``:
    the ``--config`` given). Only a file with a ``[store]`` table is loaded
    (in full, with its trust rules): the commands that never needed the
    configuration (``kun replay``) neither pay for :mod:`kun.config` nor
    are refused for a project file's other keys."""
    import msgspec

    if not any(b"store" in data for data in _candidates(home, config)):
        return None
    from kun.config.load import find_config, load_config

    found = find_config(config, home=home)
    if found is None:
        return None
    try:
        if "store" not in msgspec.toml.decode(found.read_bytes()):
            return None
    except (OSError, msgspec.DecodeError):
        pass  # load_config says what is wrong with the file, in one line
    return load_config(config, home=home).store.url


def _candidates(home: Path, config: Path | None) -> Iterator[bytes]:
    """The bytes of each file :func:`kun.config.find_config` could pick
    (``--config``, ``$KUN_CONFIG``, ``./kun.toml``, the home's), read
    without importing :mod:`kun.config`."""
    import os

    for name in (config, os.environ.get("KUN_CONFIG") or None, "kun.toml", home / "kun.toml"):
        if name is None:
            continue
        try:
            yield Path(name).expanduser().read_bytes()
        except OSError:
            continue


def shown_url(url: str) -> str:
    """``url`` as kun may print it: without its password (the store's
    :class:`~kun.store.pg_schema.Target` names it so; without psycopg, the
    URL's user part is cut to the user)."""
    try:
        from kun.store.pg_schema import Target
    except ImportError:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        user, at, host = parts.netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}{at}{host}"
        return parts._replace(netloc=netloc, query="").geturl()
    return Target(url).where


def chosen_store(given: str | None, home: Path, config: Path | None = None) -> str | None:
    """The database a command works on (``None``: the home): ``given``
    (``--store``) over ``[store] url``."""
    if given is not None:
        if not is_store_url(given):
            raise NotAStoreUrl("--store")
        return given
    return configured_url(home, config)


def open_store(home: Path, url: str | None) -> EventStore:
    """The store for ``url`` (``None``: the JSONL store of ``home``),
    not yet open: enter it with ``async with``."""
    if url is None:
        from kun.store.jsonl import JsonlEventStore

        return JsonlEventStore(home)
    try:
        from kun.store.postgres import PostgresEventStore
    except ImportError:
        raise PostgresMissing() from None
    return PostgresEventStore(url)


def reach(home: Path, url: str) -> None:
    """Open the database at ``url`` once, now (its schema created or
    checked): a server that cannot use it says so in one line before it
    starts, rather than in a traceback from its lifespan."""
    import anyio

    async def opened() -> None:
        async with open_store(home, url):
            pass

    anyio.run(opened)
